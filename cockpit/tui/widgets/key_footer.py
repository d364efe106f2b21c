"""The key bar: Textual's Footer, rebuilt only when the keys it shows change."""

from __future__ import annotations

from collections.abc import Iterable

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer

Shown = tuple[tuple[str, str, bool, str], ...]


class KeyFooter(Footer):
    """The stock Footer recomposes its thirteen keys on every change of the screen's bindings,
    which a focus move signals twice: a Tab from pane to pane cost two recomposes, restyles and
    layouts for the same row of keys. This one recomposes when the keys, labels, enabled states
    or tooltips differ from what it shows."""

    def __init__(self, *children: Widget, **kwargs: object) -> None:
        super().__init__(*children, **kwargs)  # type: ignore[arg-type]
        self._shown: Shown | None = None

    def _wanted(self, screen: Screen[object]) -> Shown:
        rows: Iterable[tuple[object, ...]] = screen.active_bindings.values()
        return tuple(
            (binding.key, binding.description, enabled, tooltip)
            for _node, binding, enabled, tooltip in rows  # type: ignore[misc]
            if binding.show
        )

    def bindings_changed(self, screen: Screen[object]) -> None:
        if self._bindings_ready and self._shown == self._wanted(screen):
            return
        super().bindings_changed(screen)

    def compose(self) -> ComposeResult:
        self._shown = self._wanted(self.screen) if self._bindings_ready else None
        yield from super().compose()
