"""The key bar: Textual's Footer, rebuilt only when the keys it shows change."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer

Shown = tuple[tuple[str, str, bool, str], ...]


class KeyFooter(Footer):
    """The stock Footer recomposes its thirteen keys on every change of the screen's bindings,
    which a focus move signals twice: a Tab from pane to pane cost two recomposes, restyles and
    layouts for the same row of keys. This one recomposes when the keys, labels, enabled states
    or tooltips differ from what it shows."""

    _shown: Shown | None = None  # what the last compose showed (None: nothing yet)

    def _wanted(self, screen: Screen[object]) -> Shown:
        return tuple(
            (active.binding.key, active.binding.description, active.enabled, active.tooltip)
            for active in screen.active_bindings.values()
            if active.binding.show
        )

    def bindings_changed(self, screen: Screen[object]) -> None:
        if self._bindings_ready and self._shown == self._wanted(screen):
            return
        super().bindings_changed(screen)

    def compose(self) -> ComposeResult:
        self._shown = self._wanted(self.screen) if self._bindings_ready else None
        yield from super().compose()
