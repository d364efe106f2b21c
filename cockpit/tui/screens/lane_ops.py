"""The main screen's lane keys and the operations they run: each in a worker, its plan confirmed
first, its events into the store (typed messages), its outcome announced, its rollback on a
cancel; the fix a refusal names; the demo's load."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from textual.screen import Screen
from textual.timer import Timer

from cockpit.bench.load import LoadCount
from cockpit.bench.models import SweepPlan
from cockpit.errors import EXIT_REFUSED, CockpitError
from cockpit.events import Finished, Notice, OpEvent, Planned, Severity, StepFinished
from cockpit.plan.render import container_name
from cockpit.tui.demo import load_while_serving
from cockpit.tui.keymap import DEMO_ONLY, NODE_CHANGING, key_of
from cockpit.tui.messages import OpFinished, OpProgress
from cockpit.tui.operations import Fix, LaneTarget, Operations, confirm_warning, fix_for
from cockpit.tui.screens.bench_plan import BenchPlanScreen
from cockpit.tui.screens.confirm import ConfirmScreen
from cockpit.tui.state.inputs import RankOnNode
from cockpit.tui.state.views import LaneView, lane_key

if TYPE_CHECKING:
    from cockpit.tui.app import CockpitApp
    from cockpit.tui.state.views import FleetSnapshot
    from cockpit.tui.widgets.pane import ViewContext

    _Screen = Screen[None]
else:
    _Screen = object

PLANNING_NOTICE_S = 0.3  # a lane key whose plan is not ready by then says "planning…"
OUTCOME_NOTICE_S = 15.0  # a failure or refusal stays on screen this long (a refusal's only trace)


class LaneOps(_Screen):
    """Mixed into `MainScreen`: the lane keys (l, s, y, b, w, restore, fix, x, g)."""

    if TYPE_CHECKING:
        cockpit: CockpitApp
        snap: FleetSnapshot | None
        ctx: ViewContext

        def selected_lane(self) -> LaneView | None: ...

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self._runs = itertools.count(1)
        self._fix: Fix | None = None  # what the `fix` key runs after a refusal it can mend
        self._bench_plans: dict[str, SweepPlan] = {}  # lane key → its last plan this session
        self._load_count = LoadCount()  # what the demo's load did since `g` last started it

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
            self.app.post_message(OpFinished(run, why))

    def _post(self, run: int, event: OpEvent) -> None:
        self.app.post_message(OpProgress(run, event))
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
