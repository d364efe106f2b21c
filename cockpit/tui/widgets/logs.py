"""NCCL pane (one transport line per rank of the followed lane, then its merged, node-tagged
tail) and the container Log pane."""

from __future__ import annotations

from typing import ClassVar, Literal

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.events import MouseScrollUp
from textual.widgets import Input

from cockpit.tui.state.parts import Part
from cockpit.tui.state.store import LOG_LINES, NCCL_LINES
from cockpit.tui.state.views import FleetSnapshot, LogSource, RankNccl
from cockpit.tui.widgets.palette import Palette, palette_of
from cockpit.tui.widgets.pane import Pane, ViewContext
from cockpit.tui.widgets.steady import SteadyStatic
from cockpit.tui.widgets.tail import LEVELS, TailLog

NCCL_MAX_LINES = NCCL_LINES  # a tail holds what the store keeps of its stream
LOG_MAX_LINES = LOG_LINES


def transport_lines(lane: str | None, ranks: tuple[RankNccl, ...], colours: Palette) -> Text:
    """One line per NCCL process of the lane's ranks (node as the cockpit names it, then NCCL's
    rank/size and transport), the problem in the error colour."""
    if lane is None:
        return Text("no lane runs", style=colours.muted)
    if not ranks:
        return Text(f"{lane}: no NCCL ranks seen yet", style=colours.muted)
    out = Text()
    for i, rank in enumerate(ranks):
        if i:
            out.append("\n")
        out.append(f"{rank.node} ", style="bold")
        problem = rank.transport.problem
        out.append(rank.transport.headline, style=colours.error if problem else colours.ok)
        if problem:
            out.append(f"  ⚠ {problem}", style=f"bold {colours.error}")
    return out


class _TailPane(Pane):
    def tail(self) -> TailLog:
        return self.query_one(TailLog)

    def on_mouse_scroll_up(self, _: MouseScrollUp) -> None:
        self.tail().set_following(False)

    shed = 0  # lines the feed dropped during floods (the tail shows the newest)

    def refresh_subtitle(self) -> None:
        shed = f" · {self.shed} shed in floods" if self.shed else ""
        self.retitle(subtitle=self.tail().describe() + shed)


class NcclPane(_TailPane):
    READS = frozenset({Part.NCCL})

    def __init__(self) -> None:
        super().__init__("NCCL", id="nccl")
        self._ranks: tuple[object, ...] = ()

    def compose(self) -> ComposeResult:
        yield SteadyStatic(id="nccl-ranks")
        yield TailLog(max_lines=NCCL_MAX_LINES, tag_node=True, id="nccl-log")

    def show(self, snap: FleetSnapshot, ctx: ViewContext) -> None:
        """The followed lane's ranks only: after a lane change nothing of the other one stays."""
        colours = palette_of(self.app)
        lane = ctx.focus
        ranks = snap.nccl_ranks.get(lane, ()) if lane else ()
        self.retitle(f"NCCL {lane}" if lane else "NCCL")
        key = (lane, ranks, self.app.theme)
        if key != self._ranks:
            self._ranks = key
            ranks_view = self.query_one("#nccl-ranks", SteadyStatic)
            ranks_view.update(transport_lines(lane, ranks, colours))
        self.tail().feed(lane, snap.nccl.get(lane, ()) if lane else (), colours)
        self.refresh_subtitle()


class LogPane(_TailPane):
    """The selected node/rank's container log, with `/` search (hides other lines), levels, its
    access lines folded (`a` shows them), wrap (`W`) and times (`T`)."""

    READS = frozenset({Part.LOGS})
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close_search", show=False, description="Close the search")
    ]

    def __init__(self, access_key: str) -> None:
        """`access_key`: the key that shows the access lines (the title names it)."""
        super().__init__("Log", id="log")
        self.access_key = access_key
        self.source: LogSource | None = None
        self.ended = False  # the source's container no longer runs (its lines are kept)
        self.access = 0  # routine access lines in the source's buffer

    def compose(self) -> ComposeResult:
        yield TailLog(max_lines=LOG_MAX_LINES, tag_node=False, id="log-tail")
        search = Input(placeholder="filter (enter to apply, empty to clear)", id="log-search")
        search.display = False
        yield search

    def show(self, snap: FleetSnapshot, ctx: ViewContext) -> None:
        self.source = source = ctx.log_source  # the screen picked it among snap.logs
        self.ended = source is not None and source not in snap.live_sources
        self.access = snap.access.get(source, 0) if source else 0
        self.retitle(self._title())
        self.tail().feed(source, snap.logs.get(source, ()) if source else (), palette_of(self.app))
        self.shed = snap.dropped.get(source, 0) if source else 0
        self.refresh_subtitle()

    def _title(self) -> str:
        """`Log dgx5/r0 (ended) · 312 access lines hidden (a) · lane@cluster`: what a narrow
        pane cuts off is the lane, named in full by the NCCL pane beside it."""
        source = self.source
        if source is None:
            return "Log"
        parts = [f"Log {source.node}/r{source.rank}" + (" (ended)" if self.ended else "")]
        if self.access:
            lines = f"{self.access} access line{'s' if self.access > 1 else ''}"
            state = "shown" if self.tail().access else "hidden"
            parts.append(f"{lines} {state} ({self.access_key})")
        parts.append(source.lane)
        return " · ".join(parts)

    def open_search(self) -> None:
        field = self.query_one(Input)
        field.display = True
        field.value = self.tail().term
        field.focus()

    def action_close_search(self) -> None:
        """Escape in the search field: closed, the filter as it was, the keys back to the log
        (they typed into the field before, so every key after `/` and Escape seemed dead)."""
        field = self.query_one(Input)
        if field.display:
            field.display = False
            self.tail().focus()

    def apply_filter(self, term: str) -> None:
        tail = self.tail()
        tail.term = term.strip()
        field = self.query_one(Input)
        field.display = False
        tail.focus()
        self._rerender()

    def cycle_level(self) -> str:
        tail = self.tail()
        tail.level = (tail.level + 1) % len(LEVELS)
        self._rerender()
        return LEVELS[tail.level]

    def toggle(self, way: Literal["access", "wrapping", "times"]) -> bool:
        """Flip a way of showing the log (a `TailLog` flag); returns it."""
        tail = self.tail()
        on = not getattr(tail, way)
        setattr(tail, way, on)
        self._rerender()
        return on

    def _rerender(self) -> None:
        self.tail().refilter()
        self.retitle(self._title())
        self.refresh_subtitle()
