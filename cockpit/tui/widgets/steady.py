"""A Static that lays the screen out again only when its height changes."""

from __future__ import annotations

from textual.visual import VisualType
from textual.widgets import Static


class SteadyStatic(Static):
    """Textual's `Static.update` asks for a layout on every update, and a layout is the whole
    screen's (~50 ms of CPU at 160×48, then every pane painted again): a lane's figures change at
    each scrape while the number of lines they take does not. This one renders the new content at
    its width and asks for a layout only when its height moved (or before its first layout)."""

    def update(self, content: VisualType = "", *, layout: bool = True) -> None:
        laid_out = self.content_size
        super().update(content, layout=False)
        if layout and (
            not laid_out.width
            or self.get_content_height(laid_out, laid_out, laid_out.width) != laid_out.height
        ):
            self.refresh(layout=True)
