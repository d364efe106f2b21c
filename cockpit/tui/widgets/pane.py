"""The pane base: a bordered, focusable, maximisable box that renders one snapshot at a time."""

from __future__ import annotations

from dataclasses import dataclass

from textual.containers import Vertical

from cockpit.tui.state.views import FleetSnapshot


@dataclass(frozen=True)
class ViewContext:
    """What the operator selected: which lane the lane-scoped panes follow, which log they read."""

    lane_key: str | None = None
    log_source: tuple[str, int] | None = None


class Pane(Vertical):
    """Subclasses implement `show`; hidden panes are skipped by the screen but still fed later."""

    ALLOW_MAXIMIZE = True
    FIRST_FRAME = False
    """Needed by the first useful frame (Lanes, Nodes). The other panes show their borders at
    start and lay out their content once that frame is painted (`MainScreen` -starting)."""
    DEFAULT_CSS = """
    Pane {
        border: round $panel-lighten-2;
        border-title-color: $text-muted;
        height: 1fr;
        padding: 0 1;
    }
    Pane:focus-within {
        border: round $accent;
        border-title-color: $accent;
        border-title-style: bold;
    }
    """

    def __init__(self, title: str, *, id: str) -> None:
        super().__init__(id=id, classes="" if self.FIRST_FRAME else "-later")
        self.border_title = title

    def show(self, snap: FleetSnapshot, ctx: ViewContext) -> None:
        raise NotImplementedError

    def retitle(self, title: str | None = None, subtitle: str | None = None) -> None:
        """Set the border texts only when they change (setting one repaints the whole pane)."""
        if title is not None and title != self.border_title:
            self.border_title = title
        if subtitle is not None and subtitle != (self.border_subtitle or ""):
            self.border_subtitle = subtitle
