"""`switch`: one plan — stop what occupies the cluster's nodes, sync the image if needed, launch.

The plan is shown (the `Planned` event) and confirmed before anything changes; every node
involved is locked for the whole switch. When the new lane fails, the lanes that served on those
nodes before can be launched again (`restore_on_failure`; the TUI offers `restore` as a key):
each on its own cluster with its own readiness check, and the end says both outcomes. Without a
restore, a failed switch says what runs on the nodes now.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass

from cockpit.config import Inventory
from cockpit.config.models import Recipe
from cockpit.errors import InputError
from cockpit.events import OpEvent, Planned
from cockpit.ops.boot_watch import READY_WATCH_S, STALL_TIMEOUT_S, Timing
from cockpit.ops.context import Emit, OpContext, OpLocks, Outcome
from cockpit.ops.facts import FactsCollector
from cockpit.ops.launch import launch_core
from cockpit.ops.locks import LockRecord
from cockpit.ops.preflight import lane_fit
from cockpit.ops.stop import LaneSurvey, stop_core, survey_lanes
from cockpit.plan import LanePlan, plan_lane

Confirm = Callable[[Planned], Awaitable[bool]]


@dataclass(frozen=True)
class Served:
    """A lane that was serving (running containers) on the nodes before a switch."""

    lane: str
    cluster: str

    def __str__(self) -> str:
        return f"{self.lane} on {self.cluster}"


def serving_before(survey: LaneSurvey, lanes: set[str], inventory: Inventory) -> list[Served]:
    """The lanes of `lanes` that run on the surveyed nodes, with the cluster their containers
    name (`cockpit.cluster`), when the inventory still knows both: what a restore relaunches."""
    found: dict[str, set[str]] = {}
    for rows in survey.containers.values():
        for row in rows:
            lane = row.labels.get("cockpit.lane")
            if lane in lanes and row.state == "running":
                found.setdefault(lane, set()).add(row.labels.get("cockpit.cluster", ""))
    return [
        Served(lane, next(iter(clusters)))
        for lane, clusters in sorted(found.items())
        if len(clusters) == 1
        and lane in inventory.recipes
        and next(iter(clusters)) in inventory.clusters
    ]


def _plans(ctx: OpContext, lanes: Sequence[Served]) -> list[LanePlan]:
    inventory = ctx.inventory
    return [
        plan_lane(inventory, inventory.recipe(s.lane), inventory.cluster(s.cluster)) for s in lanes
    ]


async def restore_core(
    ctx: OpContext,
    plans: Sequence[LanePlan],
    outcome: Outcome,
    timing: Timing,
    owner: LockRecord,
) -> AsyncIterator[OpEvent]:
    """Launch each lane again on its own cluster (its own preflight and readiness check), the
    caller holding the locks; sets `outcome` (done only when every lane serves again)."""
    served, failed = [], []
    for plan in plans:
        emit = Emit("restore", plan.recipe.name, plan.cluster.name)
        yield emit.info(f"restoring {plan.recipe.name} on {plan.cluster.name}")
        again = Outcome()
        async for event in launch_core(ctx, emit, plan, again, owner=owner, timing=timing):
            yield event
        name = f"{plan.recipe.name} on {plan.cluster.name}"
        if again.ok:
            served.append(name)
        else:
            failed.append(f"{name} ({again.summary})")
    if failed:
        outcome.fail("restore failed: " + "; ".join(failed))
    else:
        outcome.done(f"restored {', '.join(served)}: serving again")


async def switch(
    ctx: OpContext,
    recipe: Recipe,
    cluster_name: str,
    *,
    confirm: Confirm | None = None,
    boot_timeout_s: float | None = None,
    stall_timeout_s: float = STALL_TIMEOUT_S,
    ready_watch_s: float = READY_WATCH_S,
    restore_on_failure: bool = False,
    previous: list[Served] | None = None,
) -> AsyncIterator[OpEvent]:
    """The `switch` operation; `confirm` (None: proceed) sees the plan before any change.
    `previous`, when given, is filled with the lanes that served before (what `restore` takes)."""
    emit = Emit("switch", recipe.name, cluster_name)
    outcome = Outcome()
    timing = Timing(boot_timeout_s, stall_timeout_s, ready_watch_s)
    try:
        plan = plan_lane(ctx.inventory, recipe, ctx.inventory.operable(cluster_name))
    except InputError as exc:
        for event in emit.refusal(outcome, str(exc)):
            yield event
        return
    nodes = plan.cluster.nodes
    survey = await survey_lanes(ctx, ctx.inventory.nodes)
    running_here = survey.lanes_on(nodes)
    occupying = running_here - {recipe.name}
    targets = survey.targets(occupying | ({recipe.name} if occupying else set()))
    before = serving_before(survey, occupying, ctx.inventory)
    if previous is not None:
        previous[:] = before
    collector = FactsCollector.of(ctx.pool, ctx.inventory, recipe, plan.cluster)
    facts = await collector.collect(nodes)
    missing = [n for n, f in facts.items() if f.reachable and not f.holds_pinned]
    if recipe.name in running_here and not occupying:
        yield emit.planned((), f"{recipe.name} already runs on {cluster_name}")
        outcome.done(f"nothing to switch: {recipe.name} already runs on {cluster_name}")
        yield emit.end(outcome)
        return
    parts = []
    if occupying:
        parts.append(f"stop {', '.join(sorted(occupying))} on {', '.join(sorted(targets))}")
    parts.append(
        f"sync the image to {', '.join(missing)}" if missing else "image present on every node"
    )
    parts.append(f"launch {recipe.name} on {cluster_name} ({', '.join(nodes)})")
    restoring = _plans(ctx, before) if restore_on_failure else []
    if restoring:
        parts.append(f"if it fails: launch {', '.join(map(str, before))} again")
    steps = ("lock", *(("stop",) if occupying else ()), *(("sync",) if missing else ()), "launch")
    planned = emit.planned(steps, "; ".join(parts), lane_fit(plan, facts).line())
    yield planned
    if confirm is not None and not await confirm(planned):
        outcome.refuse("switch not confirmed: nothing changed")
        yield emit.end(outcome)
        return
    locks = OpLocks(ctx, emit)
    restore_nodes = [n for p in restoring for n in p.cluster.nodes]
    async for event in locks.acquire([*nodes, *targets, *restore_nodes], outcome):
        yield event
    if not outcome.ok:
        yield emit.end(outcome)
        return
    try:
        stopped = Outcome()
        if occupying:
            async for event in stop_core(ctx, emit, survey, occupying, stopped):
                yield event
            if not stopped.ok:
                outcome.fail(f"could not stop the occupying lanes: {stopped.summary}")
        if outcome.ok:
            async for event in launch_core(
                ctx, emit, plan, outcome, owner=locks.record, sync_image=True, timing=timing
            ):
                yield event
        if not outcome.ok and restoring and stopped.ok:
            restored = Outcome()
            async for event in restore_core(ctx, restoring, restored, timing, locks.record):
                yield event
            yield emit.notice(f"switch failed; {restored.summary}", error=not restored.ok)
            outcome.fail(f"{outcome.summary} — {restored.summary}")
        elif not outcome.ok:
            running = await _running_now(ctx, nodes)
            yield emit.notice(f"switch failed; running now: {running}", error=True)
            outcome.fail(f"{outcome.summary} — running now: {running}")
    finally:
        await asyncio.shield(locks.release())
    yield emit.end(outcome)


async def _running_now(ctx: OpContext, nodes: Sequence[str]) -> str:
    now = await survey_lanes(ctx, nodes)
    lanes = now.lanes_on(nodes)
    return (
        ", ".join(f"{lane} on {', '.join(sorted(now.targets({lane})))}" for lane in lanes)
        or f"nothing (no lane on {', '.join(nodes)})"
    )


async def restore(
    ctx: OpContext,
    lanes: Sequence[Served],
    *,
    boot_timeout_s: float | None = None,
    stall_timeout_s: float = STALL_TIMEOUT_S,
    ready_watch_s: float = READY_WATCH_S,
) -> AsyncIterator[OpEvent]:
    """The `restore` operation: the lanes that served before a failed switch, launched again."""
    first = lanes[0] if lanes else Served("", "")
    emit = Emit("restore", first.lane, first.cluster)
    outcome = Outcome()
    try:
        if not lanes:
            raise InputError("nothing to restore: no lane served before the switch")
        plans = _plans(ctx, lanes)
    except InputError as exc:
        for event in emit.refusal(outcome, str(exc)):
            yield event
        return
    yield emit.planned(("lock", "launch"), f"launch {', '.join(map(str, lanes))} again")
    locks = OpLocks(ctx, emit)
    async for event in locks.acquire([n for p in plans for n in p.cluster.nodes], outcome):
        yield event
    if not outcome.ok:
        yield emit.end(outcome)
        return
    try:
        timing = Timing(boot_timeout_s, stall_timeout_s, ready_watch_s)
        async for event in restore_core(ctx, plans, outcome, timing, locks.record):
            yield event
    finally:
        await asyncio.shield(locks.release())
    yield emit.end(outcome)
