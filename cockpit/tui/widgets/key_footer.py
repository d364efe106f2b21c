"""The key bar: Textual's Footer, rebuilt only when the keys it shows change."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

Shown = tuple[tuple[str, str, bool, str], ...]


class KeyFooter(Footer):
    """The stock Footer recomposes its thirteen keys on every change of the screen's bindings,
    which a focus move signals twice: a Tab from pane to pane cost two recomposes, restyles and
    layouts for the same row of keys. This one recomposes when the keys, labels, enabled states
    or tooltips differ from what it shows.

    A screen may hide keys from it (`footer_hides`: actions), e.g. the node-changing keys of a
    read-only session, which stay bound so that pressing one still says why it is off."""

    _shown: Shown | None = None  # what the last compose showed (None: nothing yet)

    def _wanted(self, screen: Screen[object]) -> Shown:
        hides = _hides(screen)
        return tuple(
            (active.binding.key, active.binding.description, active.enabled, active.tooltip)
            for active in screen.active_bindings.values()
            if active.binding.show and active.binding.action not in hides
        )

    def bindings_changed(self, screen: Screen[object]) -> None:
        if self._bindings_ready and self._shown == self._wanted(screen):
            return
        super().bindings_changed(screen)

    def compose(self) -> ComposeResult:
        self._shown = self._wanted(self.screen) if self._bindings_ready else None
        hides = _hides(self.screen)
        hidden = 0
        for widget in super().compose():
            if isinstance(widget, FooterKey) and widget.action in hides:
                hidden += 1
                continue
            yield widget
        if hidden:  # the stock compose sized its grid for every key
            self.styles.grid_size_columns = int(self.styles.grid_size_columns or 0) - hidden


def _hides(screen: Screen[object]) -> frozenset[str]:
    return frozenset(getattr(screen, "footer_hides", ()))
