"""The pane base: a bordered, focusable, maximisable box that renders one snapshot at a time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, cast

from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable

from cockpit.tui.state.parts import ALL, Part
from cockpit.tui.state.views import FleetSnapshot, LogSource

if TYPE_CHECKING:
    from cockpit.tui.app import CockpitApp


@dataclass(frozen=True)
class ViewContext:
    """What the operator selected and what the panes follow because of it."""

    lane_key: str | None = None  # the Lanes pane's cursor row
    log_source: LogSource | None = None  # the log the Log pane shows
    focus: str | None = None  # the lane KV, Engine and NCCL follow (`FleetSnapshot.focus_lane`)
    picked_log: LogSource | None = None  # a log the operator picked (Enter on a node, `n`)
    picked_live: bool = False  # its container ran when picked (let go once it ends)


class Pane(Vertical):
    """Subclasses implement `show`; hidden panes are skipped by the screen but still fed later."""

    ALLOW_MAXIMIZE = True
    FIRST_FRAME = False
    """Needed by the first useful frame (Lanes, Nodes). The other panes show their borders at
    start and lay out their content once that frame is painted (`MainScreen` -starting)."""
    FED_HIDDEN = False
    """Repainted behind a maximised pane too: a pane whose repaint after a long wait would cost
    the restore's frame more than keeping it current costs meanwhile (the Nodes table)."""
    READS: ClassVar[frozenset[Part]] = ALL
    """The parts of a snapshot `show` reads: the pane repaints when one of them changed (and
    when the selection, its size or the theme did)."""
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

    class Resized(Message):
        """The pane was laid out at another size (maximised, restored, the terminal resized):
        content fitted to a width refits from the last snapshot. Waiting for the next change
        in the store left a static view fitted to the old width (a maximised Nodes pane without
        its host columns, a maximised Engine pane's bars at the old width)."""

    def on_resize(self) -> None:
        self.post_message(self.Resized())

    @property
    def cockpit(self) -> CockpitApp:
        """The app, typed: a pane lives only in the cockpit's app."""
        return cast("CockpitApp", self.app)

    @property
    def readonly(self) -> bool:
        """A read-only session (`--readonly`): a pane's hints name no key that changes a node."""
        return self.cockpit.readonly

    def __init__(self, title: str, *, id: str) -> None:
        super().__init__(id=id, classes="" if self.FIRST_FRAME else "-later")
        self.border_title = title

    def show(self, snap: FleetSnapshot, ctx: ViewContext) -> None:
        raise NotImplementedError

    def maximising(self, snap: FleetSnapshot, ctx: ViewContext) -> None:
        """About to be maximised: lay the content out for the whole screen now (as `restoring`
        does for the layout)."""

    def restoring(self, snap: FleetSnapshot, ctx: ViewContext) -> None:
        """About to be restored: lay the content out for the size it gets back now, so that
        the restore costs one layout, not one and then another for the new content."""

    def retitle(self, title: str | None = None, subtitle: str | None = None) -> None:
        """Set the border texts only when they change (setting one repaints the whole pane)."""
        if title is not None and title != self.border_title:
            self.border_title = title
        if subtitle is not None and subtitle != (self.border_subtitle or ""):
            self.border_subtitle = subtitle


class FittedPane(Pane):
    """A pane whose table is laid out for its width: it refits to the whole screen's width
    before it is maximised, and remembers the width it had in the layout to refit to it before
    the restore (one layout a press, not two)."""

    def __init__(self, title: str, *, id: str) -> None:
        super().__init__(title, id=id)
        self._normal_width = 0  # the table's width in the layout, while the pane is maximised
        self._shown_width = 0  # the last width it was shown at (0: before the first layout)

    def _table_width(self) -> int:
        return self.query_one(DataTable).scrollable_content_region.width

    def show(self, snap: FleetSnapshot, ctx: ViewContext) -> None:
        """At the table's width; behind a maximised pane (`FED_HIDDEN`), where it has none, at
        the width it was last shown at."""
        self._shown_width = self._table_width() or self._shown_width
        self.fill(snap, self._shown_width)

    def maximising(self, snap: FleetSnapshot, ctx: ViewContext) -> None:
        self._normal_width = self._table_width()
        table = self.query_one(DataTable)
        screen = self.screen.size
        width = screen.width - self.styles.gutter.width - table.styles.gutter.width
        if table.row_count + 1 > screen.height - self.styles.gutter.height:
            width -= table.styles.scrollbar_size_vertical  # more rows than the screen holds
        self.fill(snap, width)  # an estimate: the pane's resize refits to the real width

    def restoring(self, snap: FleetSnapshot, ctx: ViewContext) -> None:
        self.fill(snap, self._normal_width)

    def fill(self, snap: FleetSnapshot, width: int) -> None:
        """The content, fitted to `width` columns."""
        raise NotImplementedError
