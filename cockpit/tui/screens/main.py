"""The one main screen: eight panes, the lane keys, the timed flush from store to panes."""

from __future__ import annotations

import asyncio
import contextlib
import io
import itertools
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, cast

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.events import Resize
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Header, Input

from cockpit.atomic import write_atomic
from cockpit.bench.load import LoadCount
from cockpit.bench.models import SweepPlan
from cockpit.errors import EXIT_REFUSED, CockpitError
from cockpit.events import Finished, Notice, OpEvent, Planned, Severity, StepFinished
from cockpit.history.past import PastFigures, read_past
from cockpit.history.prometheus import read_past_prometheus
from cockpit.plan.render import container_name
from cockpit.startup import resume_collector
from cockpit.tui.demo import load_while_serving
from cockpit.tui.keymap import (
    DEMO_ONLY,
    MAIN_BINDINGS,
    NODE_CHANGING,
    PANE_NAMES,
    TAIL_BINDINGS,
    key_of,
)
from cockpit.tui.messages import Facts
from cockpit.tui.operations import Fix, LaneTarget, Operations, confirm_warning, fix_for
from cockpit.tui.screens.bench_plan import BenchPlanScreen
from cockpit.tui.screens.confirm import ConfirmScreen
from cockpit.tui.screens.details import DetailsScreen
from cockpit.tui.screens.help import HelpScreen
from cockpit.tui.state.inputs import OpEnded, OpUpdate, RankOnNode
from cockpit.tui.state.readings import with_past
from cockpit.tui.state.views import FleetSnapshot, LaneView, LogSource, lane_key
from cockpit.tui.widgets.activity import BenchPane, OpsPane
from cockpit.tui.widgets.engine import KvPane, ThroughputPane
from cockpit.tui.widgets.key_footer import KeyFooter
from cockpit.tui.widgets.lanes import LanesPane
from cockpit.tui.widgets.logs import LogPane, NcclPane
from cockpit.tui.widgets.nodes import NodesPane
from cockpit.tui.widgets.pane import Pane, ViewContext
from cockpit.tui.widgets.pane_bar import PaneBar
from cockpit.tui.widgets.tail import TailLog

if TYPE_CHECKING:
    from pathlib import Path

    from cockpit.tui.app import CockpitApp

FLUSH_S = 0.05  # logs and tables repaint at most 20 times a second, however fast facts arrive
AGE_TICK_S = 1.0  # ages (STALE 12s) move even when no fact arrives
NARROW_BELOW = 120  # columns: below this the panes stack in one scrolling column
REVEAL_AFTER_S = 1.0  # the later panes' content appears by then even if no node answers
PLANNING_NOTICE_S = 0.3  # a lane key whose plan is not ready by then says "planning…"
OUTCOME_NOTICE_S = 15.0  # a failure or refusal stays on screen this long (a refusal's only trace)
ADVICE_NOTICE_S = 12.0  # an advisor's hint (the Engine pane's title keeps a lane's while it holds)
PAST_SPANS = (("1h", 3600.0), ("24h", 86400.0), ("7d", 7 * 86400.0))
"""What `h` cycles the KV, Engine and Nodes sparklines through, after this session's own."""
PAST_REFRESH_S = 30.0  # the store's figures are read again this often (10-30 s rows)


HELP = "help"  # the name the help screen is installed under


class MainScreen(Screen[None]):
    CSS_PATH = "main.tcss"
    BINDINGS = MAIN_BINDINGS

    @property
    def cockpit(self) -> CockpitApp:
        return cast("CockpitApp", self.app)

    def __init__(self) -> None:
        super().__init__(classes="-starting")  # until the first useful frame: see reveal()
        self.ctx = ViewContext()
        self.snap: FleetSnapshot | None = None
        self._shown_version = -1
        self._shown_at = 0.0
        self._advised = 0  # the last advisor hint shown as a notice
        self._runs = itertools.count(1)
        self._fix: Fix | None = None  # what the `fix` key runs after a refusal it can mend
        self._bench_plans: dict[str, SweepPlan] = {}  # lane key → its last plan this session
        self._load_count = LoadCount()  # what the demo's load did since `g` last started it
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
        self.set_interval(FLUSH_S, self.flush)
        self.set_timer(REVEAL_AFTER_S, self.reveal)
        self.flush()
        self.query_one("#lanes-table").focus()

    def reveal(self) -> None:
        """Lay out the later panes' content (hidden by the -starting class so that the first
        frame costs only the Lanes and Nodes panes); called once the first useful frame is
        painted, or after REVEAL_AFTER_S."""
        if self.has_class("-starting"):
            self.remove_class("-starting")
            self._shown_version = -1
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
        self._shown_version = -1
        self.call_after_refresh(self.flush)

    # ------------------------------------------------------------------ store → panes

    def flush(self) -> None:
        """Repaint visible panes from a fresh snapshot when something changed (or ages moved)."""
        store, now = self.cockpit.store, self.cockpit.clock()
        if store.version == self._shown_version and now - self._shown_at < AGE_TICK_S:
            return
        self._shown_version, self._shown_at = store.version, now
        snap = store.snapshot(now)
        if self._past is not None:  # the sparklines reach back past the session (`h`)
            snap = with_past(snap, self._past)
        self.snap = snap
        self.ctx = self._view_context(snap)
        starting = self.has_class("-starting")
        for pane in self.query(Pane):
            if self.maximized is not None and pane is not self.maximized:
                continue  # hidden behind a maximised pane: keep collecting, skip the repaint
            if starting and not pane.FIRST_FRAME:
                continue  # content not laid out yet: reveal() repaints it
            pane.show(snap, self.ctx)
        self._advise(snap)
        self.cockpit.frame_shown(snap)

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
        self._shown_version = -1

    @on(LanesPane.Selected)
    def _lane_selected(self, event: LanesPane.Selected) -> None:
        if event.key != self.ctx.lane_key:
            self.ctx = ViewContext(event.key)
            self._shown_version = -1

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

    def action_launch(self) -> None:
        self._operate("launch")

    def action_stop(self) -> None:
        self._operate("stop")

    def action_sync(self) -> None:
        self._operate("sync")

    def action_bench(self, target: LaneTarget | None = None) -> None:
        """The plan editor first, prefilled with the lane's last plan; then, as for every lane
        key, the confirmation of the operation's own plan."""
        picked = self._target("bench", target)
        if picked is not None:
            self.run_worker(
                self._edit_bench(*picked),
                group="bench-plan",
                name=f"bench plan {picked[1]}",
                exclusive=True,
                exit_on_error=False,
            )

    def action_switch(self) -> None:
        self._operate("switch")

    def action_restore(self) -> None:
        """After a failed switch: launch again what served before it (`restore` binding)."""
        restorable = getattr(self.cockpit.operations, "restorable", None)
        target = restorable() if restorable is not None else None
        if target is None:
            self.notify("restore: no failed switch to undo", timeout=3)
            return
        self._operate("restore", target)

    def operate(self, name: str, target: LaneTarget) -> None:
        """Run a lane operation on `target` as its key would on the selected lane (the command
        palette's lane entries): plan (a bench's in its editor), confirmation, then the events."""
        if name == "bench":
            self.action_bench(target)
        else:
            self._operate(name, target)

    def _target(
        self, name: str, target: LaneTarget | None = None
    ) -> tuple[LaneTarget, str, Operations] | None:
        """The lane a key acts on (the selected one unless given), its key and the operations;
        None once the notice says why the key does nothing."""
        if self.cockpit.readonly and name in NODE_CHANGING:
            self.notify(
                f"read-only: {name} is disabled (started with --readonly)", severity="warning"
            )
            return None
        if target is None:
            selected = self.selected_lane()
            if selected is None:
                self.notify("select a lane first (Lanes pane)", severity="warning")
                return None
            target = LaneTarget(selected.lane, selected.cluster)
        lane = self.snap.lane(lane_key(target.lane, target.cluster)) if self.snap else None
        ops = self.cockpit.operations
        if ops is None or lane is None:
            self.notify(f"{name}: no fleet operations in this session", severity="warning")
            return None
        return target, lane.key, ops

    def _operate(self, name: str, target: LaneTarget | None = None, *, ask: bool = True) -> None:
        picked = self._target(name, target)
        if picked is not None:
            target, key, ops = picked
            self._start(name, key, getattr(ops, name)(target), ask)

    def _start(self, name: str, key: str, events: AsyncIterator[OpEvent], ask: bool = True) -> None:
        """Run an operation's events in a worker: its plan confirmed first (if `ask`ed)."""
        # a plan that asks the nodes takes a second or two: say the key was taken
        planning = self.set_timer(
            PLANNING_NOTICE_S, lambda: self.notify(f"{name} {key}: planning…", timeout=3)
        )
        self.run_worker(
            self._guarded(name, next(self._runs), events, planning, ask),
            group="ops",
            name=f"{name} {key}",
            exit_on_error=False,
        )

    async def _edit_bench(self, target: LaneTarget, key: str, ops: Operations) -> None:
        """The editor on the lane's last plan: this session's, else its newest report's (read in
        a thread: it reads every report), else `cockpit bench`'s defaults; the plan it is left
        with on Enter is remembered and goes to the usual confirmation."""
        try:
            start, origin = self._bench_plans.get(key), "your last plan of this lane"
            if start is None:
                start = await asyncio.to_thread(ops.last_bench_plan, target)
                origin = "the plan of the lane's last report"
            if start is None:
                start, origin = SweepPlan(), "cockpit bench's defaults (no earlier plan)"
            recipe = self.cockpit.store.inventory.recipes[target.lane]
            editor = BenchPlanScreen(target, start, recipe.serve.max_model_len, origin)
            plan = await self.app.push_screen_wait(editor)
        except Exception as exc:  # reading the reports failed: shown, the app goes on
            self.notify(f"bench: {type(exc).__name__}: {exc}", severity="error")
            return
        if plan is None:
            self.notify("bench cancelled: nothing changed", timeout=3)
            return
        self._bench_plans[key] = plan
        self._start("bench", key, ops.bench(target, plan))

    async def _guarded(
        self, name: str, run: int, events: AsyncIterator[OpEvent], planning: Timer, ask: bool
    ) -> None:
        """Run `run` of an operation; however its worker ends (its Finished, an exception, a
        cancel), the store hears it, so nothing of it stays "running". An operation that raises
        ends as a failed one, shown, never silently."""
        why = "ended without an outcome"
        try:
            await self._run(run, events, planning, ask)
        except asyncio.CancelledError:
            why = "cancelled by the operator"
            raise
        except Exception as exc:  # the operation's bug or I/O error: show it, keep the app
            why = f"{type(exc).__name__}: {exc}"
            self.notify(f"{name} failed: {why}", severity="error", timeout=OUTCOME_NOTICE_S)
        finally:
            self.app.post_message(Facts([OpEnded(run, why)]))

    def _post(self, run: int, event: OpEvent) -> None:
        self.app.post_message(Facts([OpUpdate(run, event)]))
        if isinstance(event, StepFinished) and event.node:
            if event.step == "start" and event.ok:
                self._follow_started(event)
            self.cockpit.node_changed(event.node)

    def _follow_started(self, event: StepFinished) -> None:
        """A launch started a rank's container: its log is followed from now on (a rank that
        fails at once is still shown), before the node's container list names it."""
        inventory = self.cockpit.store.inventory
        try:
            recipe, cluster = inventory.recipe(event.lane), inventory.cluster(event.cluster)
        except CockpitError:
            return
        if event.node not in cluster.nodes:
            return
        rank = cluster.nodes.index(event.node)
        short = event.detail.strip()[:12]
        container = short if short and all(c in "0123456789abcdef" for c in short) else ""
        self.cockpit.follow_container(
            event.node,
            container_name(recipe, rank),
            RankOnNode(event.lane, event.cluster, rank, container=container),
        )

    async def _run(
        self, run: int, events: AsyncIterator[OpEvent], planning: Timer, ask: bool
    ) -> None:
        """Plan → confirmation (unless not `ask`ed: the demo's own launch) → the events into the
        store; cancel throws into the operation."""
        try:
            first = await anext(events, None)
        finally:
            planning.stop()
        if first is None:
            return
        confirmed = (
            not ask
            or not isinstance(first, Planned)
            or await self.app.push_screen_wait(ConfirmScreen(first, self._warning(first)))
        )
        if not confirmed:
            await events.aclose()  # type: ignore[attr-defined]
            self.notify(f"{first.op} cancelled: nothing changed", timeout=3)
            return
        self._post(run, first)
        if isinstance(first, Finished):
            self._announce(first)
            return
        self._set_fix(None)  # a new operation: an earlier refusal's fix no longer stands
        checks: set[str] = set()  # the preflight checks that failed
        try:
            async for event in events:
                self._post(run, event)
                if isinstance(event, Notice) and event.check and event.severity is Severity.ERROR:
                    checks.add(event.check)
                if isinstance(event, Finished) and event.op == first.op:
                    fix = fix_for(event, checks)
                    self._set_fix(fix)
                    self._announce(event, fix)
        except asyncio.CancelledError:
            await self._roll_back(run, first, events)

    def _warning(self, planned: Planned) -> str:
        key = lane_key(planned.lane, planned.cluster) if planned.lane else None
        return confirm_warning(planned, self.snap.lane(key) if self.snap and key else None)

    def _set_fix(self, fix: Fix | None) -> None:
        if fix != self._fix:
            self._fix = fix
            self.refresh_bindings()  # the footer offers the key only while there is a fix

    def action_fix(self) -> None:
        """Run what the last refusal named as its fix (`fix` binding), e.g. sync then launch."""
        fix = self._fix
        if fix is None:
            self.notify("fix: no refusal to mend", timeout=3)
            return
        self._operate(fix.op, fix.target)

    def _announce(self, finished: Finished, fix: Fix | None = None) -> None:
        if finished.ok:
            self.notify(f"{finished.op}: {finished.summary}")
            return
        refused = finished.exit_code == EXIT_REFUSED
        message = f"{finished.op} {'refused' if refused else 'failed'}: {finished.summary}"
        if fix is not None:
            message += f" — press {key_of('fix', self.cockpit.keymap_overrides)} to {fix.does}"
        restorable = getattr(self.cockpit.operations, "restorable", None)
        if finished.op == "switch" and not refused and restorable and restorable():
            key = key_of("restore", self.cockpit.keymap_overrides)
            message += f" — press {key} to restore the previous lane"
        self.notify(message, severity="warning" if refused else "error", timeout=OUTCOME_NOTICE_S)

    async def _roll_back(self, run: int, first: OpEvent, events: AsyncIterator[OpEvent]) -> None:
        """The operation sees the cancellation where it waits and yields its rollback events;
        the worker then ends cancelled (with or without a Finished of the operation's own)."""
        try:
            event = await events.athrow(asyncio.CancelledError())  # type: ignore[attr-defined]
            while event is not None:  # None: the cancel had already ended the operation
                self._post(run, event)
                event = await anext(events)
        except (StopAsyncIteration, asyncio.CancelledError):
            pass
        self.notify(f"{first.op} cancelled", severity="warning")
        raise asyncio.CancelledError

    async def cancel_operations(self) -> None:
        """Cancel every running operation and wait until each has rolled back (SIGTERM)."""
        running = [w for w in self.workers if w.group == "ops" and w.is_running]
        for worker in running:
            worker.cancel()
        for worker in running:
            with contextlib.suppress(Exception):
                await worker.wait()

    def action_cancel_op(self) -> None:
        running = [w for w in self.workers if w.group == "ops" and w.is_running]
        if not running:
            self.notify("no operation running", timeout=3)
            return
        running[-1].cancel()

    def _start_load(self) -> None:
        demo = self.cockpit.demo
        if demo is None:
            return
        key = lane_key(demo.lane.lane, demo.lane.cluster)
        self._load_count = LoadCount()
        self.run_worker(
            load_while_serving(
                lambda: self.snap.lane(key) if self.snap else None,
                demo,
                self._load_count,
                lambda text: self.notify(text, timeout=4),
            ),
            group="load",
            name=f"demo load {key}",
            exit_on_error=False,
        )

    def action_load(self) -> None:
        """The demo's synthetic load on or off (`load` binding; only in `cockpit demo`)."""
        running = [w for w in self.workers if w.group == "load" and w.is_running]
        if running:
            for worker in running:
                worker.cancel()
            count = self._load_count
            failed = f", {count.failed} failed: {count.last_error}" if count.failed else ""
            self.notify(
                f"demo load stopped after {count.ok} requests{failed} (g starts it again)",
                timeout=4,
            )
            return
        self.notify("demo load: starting once its lane serves", timeout=4)
        self._start_load()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The demo's load exists only in `cockpit demo`; `fix` only after a refusal it mends."""
        if action == "fix":
            return self._fix is not None
        return action not in DEMO_ONLY or self.cockpit.demo is not None

    @property
    def footer_hides(self) -> frozenset[str]:
        """Keys not offered in the footer: in a read-only session the node-changing ones (they
        still say why they are off when pressed)."""
        return NODE_CHANGING if self.cockpit.readonly else frozenset()

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

    def action_search(self) -> None:
        log = self.query_one(LogPane)
        if self.maximized is not None and self.maximized is not log:
            self.minimize()
        log.open_search()

    @on(Input.Submitted, "#log-search")
    def _search(self, event: Input.Submitted) -> None:
        self.query_one(LogPane).apply_filter(event.value)

    def action_follow(self) -> None:
        focused = self.focused
        tails = [focused] if isinstance(focused, TailLog) else list(self.query(TailLog))
        on = not all(t.following for t in tails)
        for tail in tails:
            tail.set_following(on)
        for pane in self.query(NcclPane).results():
            pane.refresh_subtitle()
        self.query_one(LogPane).refresh_subtitle()
        self.notify("following the tail" if on else "paused: new lines are counted", timeout=2)

    def action_level(self) -> None:
        level = self.query_one(LogPane).cycle_level()
        self.notify(f"log level: {level}", timeout=2)

    def action_access(self) -> None:
        log = self.query_one(LogPane)
        shown = log.toggle("access")
        self.notify(f"access lines {'shown' if shown else 'folded'} ({log.access} in the log)",
                    timeout=2)  # fmt: skip

    def action_wrap(self) -> None:
        wrapped = self.query_one(LogPane).toggle("wrapping")
        self.notify("log lines wrapped" if wrapped else "log lines cut (→/← by a page)", timeout=2)

    def action_timestamps(self) -> None:
        on = self.query_one(LogPane).toggle("times")
        self.notify(f"log times {'shown' if on else 'hidden'}", timeout=2)

    def action_save_log(self) -> None:
        """The Log pane's whole buffer to `logs/…` (cockpit.tui.logfile), written in a thread:
        the atomic write's fsyncs stay off the event loop. In a browser (`cockpit serve`) it is
        the browser's download instead: nothing is written on the host that serves it."""
        from cockpit.tui.logfile import log_path, log_text  # a rare key: loaded when pressed

        source = self.query_one(LogPane).source
        entries = self.snap.logs.get(source, ()) if self.snap and source else ()
        if source is None or not entries:
            self.notify("no log lines to save", severity="warning", timeout=3)
            return
        path = log_path(source, datetime.now(UTC))
        text = log_text(entries)
        if self.app.is_web:
            self.app.deliver_text(io.StringIO(text), save_filename=path.name)
            self.notify(f"{len(entries)} lines sent to the browser as {path.name}", timeout=8)
            return

        def save() -> None:
            try:
                write_atomic(path, text)
            except OSError as exc:
                self.app.call_from_thread(
                    self.notify, f"log not saved: {exc}", severity="error", timeout=8
                )
                return
            rank = f"{source.node}/r{source.rank}"
            saved = f"saved {len(entries)} lines of {rank} to {path.resolve()}"
            self.app.call_from_thread(self.notify, saved, timeout=8)

        self.run_worker(save, thread=True, group="save-log", exit_on_error=False)

    def action_next_log(self) -> None:
        sources = self.snap.log_sources if self.snap else ()
        if not sources:
            return
        current = self.ctx.log_source
        index = (sources.index(current) + 1) % len(sources) if current in sources else 0
        self._pick_log(sources[index])

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
                pane.maximising()
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
        self._shown_version = -1

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
                self._shown_version = -1
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
