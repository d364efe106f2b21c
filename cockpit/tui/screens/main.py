"""The one main screen: eight panes, the repaint from store to panes (`frames` says when), the
view keys; its lane keys and operations (`lane_ops`) and its log keys (`log_keys`) are mixed in."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import TYPE_CHECKING, cast

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.events import Resize
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Header, Input

from cockpit.errors import CockpitError
from cockpit.history.past import PastFigures, read_past
from cockpit.history.prometheus import read_past_prometheus
from cockpit.startup import resume_collector
from cockpit.tui.keymap import (
    DEMO_ONLY,
    MAIN_BINDINGS,
    NODE_CHANGING,
    PANE_NAMES,
    TAIL_BINDINGS,
    key_of,
)
from cockpit.tui.screens.details import DetailsScreen
from cockpit.tui.screens.frames import Frames
from cockpit.tui.screens.help import HelpScreen
from cockpit.tui.screens.lane_ops import OUTCOME_NOTICE_S, LaneOps
from cockpit.tui.screens.log_keys import LogKeys
from cockpit.tui.state.parts import ALL
from cockpit.tui.state.readings import with_past
from cockpit.tui.state.views import FleetSnapshot, LaneView, LogSource
from cockpit.tui.widgets.activity import BenchPane, OpsPane
from cockpit.tui.widgets.engine import KvPane, ThroughputPane
from cockpit.tui.widgets.key_footer import KeyFooter
from cockpit.tui.widgets.lanes import LanesPane
from cockpit.tui.widgets.logs import LogPane, NcclPane
from cockpit.tui.widgets.nodes import NodesPane
from cockpit.tui.widgets.pane import Pane, ViewContext
from cockpit.tui.widgets.pane_bar import PaneBar

if TYPE_CHECKING:
    from pathlib import Path

    from cockpit.tui.app import CockpitApp

NARROW_BELOW = 120  # columns: below this the panes stack in one scrolling column
REVEAL_AFTER_S = 1.0  # the later panes' content appears by then even if no node answers
ADVICE_NOTICE_S = 12.0  # an advisor's hint (the Engine pane's title keeps a lane's while it holds)
PAST_SPANS = (("1h", 3600.0), ("24h", 86400.0), ("7d", 7 * 86400.0))
"""What `h` cycles the KV, Engine and Nodes sparklines through, after this session's own."""
PAST_REFRESH_S = 30.0  # the store's figures are read again this often (10-30 s rows)


HELP = "help"  # the name the help screen is installed under


class MainScreen(LaneOps, LogKeys, Screen[None]):
    CSS_PATH = "main.tcss"
    BINDINGS = MAIN_BINDINGS

    @property
    def cockpit(self) -> CockpitApp:
        return cast("CockpitApp", self.app)

    def __init__(self) -> None:
        super().__init__(classes="-starting")  # until the first useful frame: see reveal()
        self.ctx = ViewContext()
        self.snap: FleetSnapshot | None = None
        self.frames = Frames(self, self.flush, lambda: self.cockpit.clock())  # when to repaint
        self._advised = 0  # the last advisor hint shown as a notice
        self._past_span: int | None = None  # index in PAST_SPANS; None: this session's series
        self._past: PastFigures | None = None  # the store's, read off the loop
        self._help_for: tuple[list[tuple[str, str, str]], bool] | None = None  # the kept help's

    def compose(self) -> ComposeResult:
        yield Header()
        yield PaneBar(PANE_NAMES)
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield LanesPane()
                yield NodesPane()
                with Horizontal(id="tails"):
                    yield NcclPane()
                    yield LogPane(key_of("access", self.cockpit.keymap_overrides))
            with Vertical(id="right"):
                yield OpsPane()
                yield KvPane()
                yield ThroughputPane()
                yield BenchPane()
        yield KeyFooter(compact=True)

    def on_mount(self) -> None:
        self.sub_title = "READ-ONLY" if self.cockpit.readonly else self.cockpit.fleet_label
        self.cockpit.store.on_change = self.frames.changed
        self.set_timer(REVEAL_AFTER_S, self.reveal)
        self.frames.touch()
        self.flush()
        self.query_one("#lanes-table").focus()

    def reveal(self) -> None:
        """Lay out the later panes' content (hidden by the -starting class so that the first
        frame costs only the Lanes and Nodes panes); called once the first useful frame is
        painted, or after REVEAL_AFTER_S."""
        if self.has_class("-starting"):
            self.remove_class("-starting")
            self.frames.touch()
            self.flush()  # before the next layout, as on mount: the tails start at their end
            self.repaint_soon()  # and after it: content fitted to a width refits to the real one
            resume_collector()  # start-up is over (cockpit.startup)
            demo = self.cockpit.demo
            if demo is not None:  # the demo's opening act: its lane launched, then the load
                self._operate("launch", demo.lane, ask=False)
                self._start_load()

    def on_resize(self, event: Resize) -> None:
        self.set_class(event.size.width < NARROW_BELOW, "-narrow")
        self.repaint_soon()

    def on_pane_resized(self) -> None:
        self.repaint_soon()

    def repaint_soon(self) -> None:
        """Repaint every pane after the next layout (sizes changed, or the selection did)."""
        self.frames.touch()
        self.call_after_refresh(self.flush)

    # ------------------------------------------------------------------ store → panes

    def flush(self) -> None:
        """Repaint the panes that read a part changed since the last repaint (every pane when
        the followed lane or log changed), from one fresh snapshot (`Frames` says when)."""
        store = self.cockpit.store
        parts = self.frames.take(store.take_dirty())
        if not parts:
            return
        now = self.cockpit.clock()
        snap = store.snapshot(now)
        if self._past is not None:  # the sparklines reach back past the session (`h`)
            snap = with_past(snap, self._past)
        ctx = self._view_context(snap)
        if ctx != self.ctx:
            parts = ALL
        self.snap, self.ctx = snap, ctx
        starting = self.has_class("-starting")
        for pane in self.query(Pane):
            if self.maximized not in (None, pane) and not pane.FED_HIDDEN:
                continue  # hidden behind a maximised pane: keep collecting, skip the repaint
            if starting and not pane.FIRST_FRAME:
                continue  # content not laid out yet: reveal() repaints it
            if pane.READS & parts:
                pane.show(snap, self.ctx)
        self._advise(snap)
        self.cockpit.frame_shown(snap)
        due = [d for d in (store.next_change(now), self.cockpit.sample_due()) if d is not None]
        self.frames.arm_tick(min(due, default=None), now)

    def _advise(self, snap: FleetSnapshot) -> None:
        """Each advisor hint once, as a notice, when its condition begins (the store judges
        the onsets; a handful of hints at most is looked at here)."""
        for seq, hint in snap.hints:
            if seq > self._advised:
                self.notify(
                    f"{hint.subject}: {hint.text}", severity="warning", timeout=ADVICE_NOTICE_S
                )
        if snap.hints:
            self._advised = snap.hints[-1][0]

    def _view_context(self, snap: FleetSnapshot) -> ViewContext:
        """Which lane the lane-scoped panes follow and which log the Log pane shows: the
        operator's pick while it stands (a picked log whose container ended is let go, one
        picked after it ended is kept), else what `FleetSnapshot.log_for` says."""
        key = self.ctx.lane_key or (snap.lanes[0].key if snap.lanes else None)
        picked = self.ctx.picked_log
        if picked is not None and self.ctx.picked_live and picked not in snap.live_sources:
            picked = None
        if picked is not None and picked not in snap.logs:
            picked = None
        source = picked or snap.log_for(key)
        picked_live = self.ctx.picked_live if picked else False
        return ViewContext(key, source, snap.focus_lane(key), picked, picked_live)

    def _pick_log(self, source: LogSource) -> None:
        live = self.snap is not None and source in self.snap.live_sources
        self.ctx = replace(self.ctx, log_source=source, picked_log=source, picked_live=live)
        self.frames.touch()

    @on(LanesPane.Selected)
    def _lane_selected(self, event: LanesPane.Selected) -> None:
        if event.key != self.ctx.lane_key:
            self.ctx = ViewContext(event.key)
            self.frames.touch()

    @on(NodesPane.Chosen)
    def _node_chosen(self, event: NodesPane.Chosen) -> None:
        snap = self.snap
        sources = [s for s in (snap.log_sources if snap else ()) if s.node == event.node]
        if not sources or snap is None:
            self.notify(f"no container log on {event.node}", timeout=3)
            return
        live = [s for s in sources if s in snap.live_sources]
        self._pick_log((live or sources)[0])

    # ------------------------------------------------------------------ lane keys

    def selected_lane(self) -> LaneView | None:
        key = self.ctx.lane_key
        return self.snap.lane(key) if self.snap and key else None

    # ------------------------------------------------------------------ view keys

    def action_details(self) -> None:
        lane = self.selected_lane()
        if lane is None:
            return
        ops = tuple(op for op in (self.snap.ops if self.snap else ()) if op.lane == lane.lane)
        recipe = self.cockpit.store.inventory.recipes[lane.lane]
        self.app.push_screen(DetailsScreen(lane, recipe, ops))

    def on_data_table_row_selected(self) -> None:
        """Enter on the Lanes table (the Nodes table stops its own)."""
        self.action_details()

    @on(Input.Submitted, "#log-search")
    def _search(self, event: Input.Submitted) -> None:
        self.query_one(LogPane).apply_filter(event.value)

    def _panes(self) -> list[Pane]:
        return list(self.query(Pane))

    def action_pane(self, number: int) -> None:
        """Focus pane `number` (1-8, layout order) and bring it into view: on a narrow terminal
        the stacked panes are mostly below the fold."""
        panes = self._panes()
        if not 1 <= number <= len(panes):
            return
        pane = panes[number - 1]
        if self.maximized is not None and self.maximized is not pane:
            self.minimize()
        target = next((w for w in pane.query("*") if w.focusable), None)
        if target is not None:
            target.focus()
        pane.scroll_visible(animate=False)
        self.repaint_soon()

    def on_descendant_focus(self) -> None:
        """The pane bar marks the pane the focus is in."""
        focused = self.focused
        panes = self._panes()
        index = next(
            (
                i
                for i, pane in enumerate(panes)
                if focused is not None and focused in pane.walk_children()
            ),
            None,
        )
        self.query_one(PaneBar).mark(index)

    def _watch_maximized(self, previously: Widget | None, maximized: Widget | None) -> None:
        """Textual also sets `-maximized-view` on the screen, which restyles every node of the DOM
        (and drops every pane's line cache) on each press; the panes' own `-maximized` class is
        all this screen's CSS needs (`main.tcss`), so only that changes."""
        if previously is not None:
            previously.remove_class("-maximized")
        if maximized is not None:
            maximized.add_class("-maximized")

    def action_maximise(self) -> None:
        if isinstance(self.maximized, Pane):
            self.maximized.restoring(self.snap, self.ctx)
            self.minimize()
        elif self.focused is not None:
            pane = next((w for w in self.focused.ancestors_with_self if isinstance(w, Pane)), None)
            if pane is not None:
                pane.maximising(self.snap, self.ctx)
            self.maximize(self.focused)
        self.repaint_soon()

    def action_past(self) -> None:
        """The KV, Engine and Nodes sparklines over the last hour, day, week (from the history
        store, read in a thread every PAST_REFRESH_S), then this session's again."""
        recorder, prometheus = self.cockpit.recorder, self.cockpit.past_source
        if recorder is None and prometheus is None:
            self.notify("history: no history store in this session", timeout=3)
            return
        self.workers.cancel_group(self, "past")
        self._past = None
        index = 0 if self._past_span is None else self._past_span + 1
        self._past_span = index if index < len(PAST_SPANS) else None
        base = "READ-ONLY" if self.cockpit.readonly else self.cockpit.fleet_label
        if self._past_span is None:
            self.sub_title = base
            self.notify("history: this session's", timeout=3)
        else:
            label, span = PAST_SPANS[self._past_span]
            self.sub_title = f"history {label} · {base}"
            self.notify(f"history: KV, Engine and Nodes over the last {label}", timeout=3)
            source = prometheus or recorder.writer.path  # type: ignore[union-attr]
            self.run_worker(self._read_past(source, span), group="past", exit_on_error=False)
        self.frames.touch()

    async def _read_past(self, source: Path | str, span: float) -> None:
        """Read the figures for the followed lane and every node from the store (a path) or a
        Prometheus (its URL), again every PAST_REFRESH_S or as soon as the followed lane
        changes, until `h` moves on."""
        read = read_past_prometheus if isinstance(source, str) else read_past
        read_for: object = object()  # the followed lane at the last read (none yet)
        read_at = -PAST_REFRESH_S
        while True:
            focus = self.ctx.focus
            if focus != read_for or time.monotonic() - read_at >= PAST_REFRESH_S:
                read_for, read_at = focus, time.monotonic()
                lane = self.snap.lane(focus) if self.snap and focus else None
                nodes = [n.name for n in self.snap.nodes] if self.snap else []
                where = (lane.lane, lane.cluster) if lane else None
                try:
                    past = await asyncio.to_thread(
                        read, source, where, nodes, self.cockpit.clock(), span
                    )
                except CockpitError as exc:
                    self.notify(f"history: {exc}", severity="error", timeout=OUTCOME_NOTICE_S)
                    return
                self._past = past
                self.frames.touch()
            await asyncio.sleep(1.0)

    def action_theme(self) -> None:
        name = self.cockpit.cycle_theme()
        self.notify(f"theme: {name}", timeout=2)

    def action_help(self) -> None:
        """The help is built once and kept (installed) while its keys stay the same: composing it
        and measuring its table again cost most of a press."""
        rows, readonly = self.key_rows(), self.cockpit.readonly
        if (rows, readonly) != self._help_for:
            if self._help_for is not None:
                self.app.uninstall_screen(HELP)
            self.app.install_screen(HelpScreen(rows, readonly), HELP)
            self._help_for = (rows, readonly)
        self.app.push_screen(HELP)

    def action_quit(self) -> None:
        self.app.exit()

    def key_rows(self) -> list[tuple[str, str, str]]:
        """(keys, description, note) for every binding of this screen and of its logs, keymap
        overrides applied."""
        overrides = self.cockpit.keymap_overrides
        rows = []
        for binding in (*MAIN_BINDINGS, *TAIL_BINDINGS):
            if binding.action in DEMO_ONLY and self.cockpit.demo is None:
                continue
            if binding.action.startswith("pane(") and not any(
                k.startswith("pane") for k in overrides
            ):  # one row for the eight of them, unless some were rebound
                if binding.id == "pane1":
                    names = ", ".join(f"{n} {name}" for n, name in enumerate(PANE_NAMES, 1))
                    rows.append((f"1-{len(PANE_NAMES)}", f"Focus a pane: {names}", ""))
                continue
            keys = overrides.get(binding.id or "", binding.key).split(",")
            shown = ", ".join(
                self.app.get_key_display(replace(binding, key=key.strip(), key_display=None))
                if binding.id in overrides or not binding.key_display
                else binding.key_display
                for key in keys
            )
            note = (
                "disabled (read-only)"
                if self.cockpit.readonly and binding.action in NODE_CHANGING
                else ""
            )
            rows.append((shown, binding.tooltip or binding.description, note))
        return rows
