"""A scripted stand-in for the fleet's operations: a plan, timed steps, a rollback on cancel.

It records what ran, so a test can tell "confirmed and ran" from "planned only", and the plans
benches were given. `events` gives an operation its own script (what follows the plan: a
refusal, a switch's nested sync, …); `last_plans` stands for the lanes' reports.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from cockpit.bench.events import SweepPlanned
from cockpit.bench.models import SweepPlan
from cockpit.events import Finished, OpEvent, Planned, Progress, StepFinished, StepStarted
from cockpit.tui.operations import LaneTarget

Script = Callable[[LaneTarget], list[OpEvent]]


@dataclass
class ScriptedOperations:
    step_s: float = 0.05
    steps: int = 3
    plan_s: float = 0.0  # how long the plan takes (a real one asks the nodes)
    memory: str = ""  # the plan's memory fit line (a real launch reads it on the head)
    events: dict[str, Script] = field(default_factory=dict)  # op → its events after the plan
    started: list[tuple[str, str]] = field(default_factory=list)  # (op, lane) that passed the plan
    rolled_back: list[str] = field(default_factory=list)
    benched: list[tuple[str, SweepPlan]] = field(default_factory=list)  # (lane, plan) confirmed
    last_plans: dict[LaneTarget, SweepPlan] = field(default_factory=dict)

    async def _op(
        self, op: str, target: LaneTarget, sweep: SweepPlan | None = None
    ) -> AsyncIterator[OpEvent]:
        where = {"lane": target.lane, "cluster": target.cluster}
        kw = {"op": op, **where}
        names = tuple(f"step {i + 1}" for i in range(self.steps))
        await asyncio.sleep(self.plan_s)
        summary = f"{op} {target.lane} on {target.cluster}"
        if sweep is None:
            yield Planned(steps=names, summary=summary, memory=self.memory, **kw)
        else:
            points = tuple(p.label for p in sweep.points)
            yield SweepPlanned(steps=points, summary=summary, plan=sweep, **kw)
            self.benched.append((target.lane, sweep))
        self.started.append((op, target.lane))
        if op in self.events:
            for event in self.events[op](target):
                yield event
                await asyncio.sleep(self.step_s)
            return
        try:
            for i, name in enumerate(names):
                yield StepStarted(step=name, node="dgx1", **kw)
                yield Progress(step=name, done=i + 1, total=self.steps, **kw)
                await asyncio.sleep(self.step_s)
                yield StepFinished(step=name, **kw)
        except asyncio.CancelledError:
            self.rolled_back.append(op)
            yield StepStarted(step="rollback", **kw)
            yield Finished.failed(op, "cancelled: rolled back", **where)
            return
        yield Finished.done(op, f"{op} done", **where)

    def launch(self, target: LaneTarget) -> AsyncIterator[OpEvent]:
        return self._op("launch", target)

    def sync_launch(self, target: LaneTarget) -> AsyncIterator[OpEvent]:
        return self._op("sync_launch", target)

    def stop(self, target: LaneTarget) -> AsyncIterator[OpEvent]:
        return self._op("stop", target)

    def sync(self, target: LaneTarget) -> AsyncIterator[OpEvent]:
        return self._op("sync", target)

    def sync_model(self, target: LaneTarget) -> AsyncIterator[OpEvent]:
        return self._op("sync_model", target)

    def switch(self, target: LaneTarget) -> AsyncIterator[OpEvent]:
        return self._op("switch", target)

    def bench(self, target: LaneTarget, sweep: SweepPlan) -> AsyncIterator[OpEvent]:
        return self._op("bench", target, sweep)

    def last_bench_plan(self, target: LaneTarget) -> SweepPlan | None:
        return self.last_plans.get(target)
