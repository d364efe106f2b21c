"""The pane switcher: every pane's name with its digit, the focused one marked. Shown on narrow
terminals, where the panes stack in one scrolling column and most are below the fold (k9s shows
its views the same way); the digits work at every size."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from cockpit.tui.widgets.palette import palette_of


def bar_text(names: Sequence[str], focused: int | None, accent: str, muted: str) -> Text:
    """`1 Lanes  2 Nodes  …` with the focused pane reversed in the accent colour."""
    out = Text(no_wrap=True, overflow="ellipsis")
    for index, name in enumerate(names):
        if index:
            out.append("  ")
        out.append(f"{index + 1}", style=f"bold {accent}")
        out.append(f" {name}", style=f"reverse {accent}" if index == focused else muted)
    return out


class PaneBar(Static):
    DEFAULT_CSS = """
    PaneBar {
        height: 1;
        padding: 0 1;
        display: none;
    }
    """

    def __init__(self, names: Sequence[str]) -> None:
        super().__init__(id="pane-bar")
        self.names = tuple(names)
        self._shown: tuple[int | None, str] | None = None

    def mark(self, focused: int | None) -> None:
        """Repaint only when the focused pane or the theme changed."""
        if self._shown == (focused, self.app.theme):
            return
        self._shown = (focused, self.app.theme)
        colours = palette_of(self.app)
        self.update(bar_text(self.names, focused, colours.accent, colours.muted))
