"""`switch`: one plan — stop what occupies the cluster's nodes, sync the image if needed, launch.

The plan is shown (the `Planned` event) and confirmed before anything changes; every node
involved is locked for the whole switch. A failed launch says what runs on the nodes now.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

from cockpit.config.models import Recipe
from cockpit.errors import InputError
from cockpit.ops.context import Emit, OpContext, Outcome
from cockpit.ops.events import OpEvent, Planned
from cockpit.ops.facts import FactsCollector
from cockpit.ops.launch import launch_core
from cockpit.ops.locks import NodeLocks, new_record
from cockpit.ops.stop import stop_core, survey_lanes
from cockpit.plan import plan_lane

Confirm = Callable[[Planned], Awaitable[bool]]


async def switch(
    ctx: OpContext,
    recipe: Recipe,
    cluster_name: str,
    *,
    confirm: Confirm | None = None,
    boot_timeout_s: float | None = None,
) -> AsyncIterator[OpEvent]:
    """The `switch` operation; `confirm` (None: proceed) sees the plan before any change."""
    emit = Emit("switch", recipe.name, cluster_name)
    outcome = Outcome()
    try:
        plan = plan_lane(ctx.inventory, recipe, ctx.inventory.cluster(cluster_name))
    except InputError as exc:
        for event in emit.refusal(outcome, str(exc)):
            yield event
        return
    nodes = plan.cluster.nodes
    survey = await survey_lanes(ctx, ctx.inventory.nodes)
    running_here = survey.lanes_on(nodes)
    occupying = running_here - {recipe.name}
    targets = survey.targets(occupying | ({recipe.name} if occupying else set()))
    collector = FactsCollector(
        ctx.pool, recipe, ctx.inventory.model_cache_of(plan.cluster),
        node_caches=ctx.inventory.model_caches(plan.cluster),
    )  # fmt: skip
    facts = await collector.collect(nodes)
    missing = [n for n, f in facts.items() if f.reachable and not f.has_digest]
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
    steps = ("lock", *(("stop",) if occupying else ()), *(("sync",) if missing else ()), "launch")
    planned = emit.planned(steps, "; ".join(parts))
    yield planned
    if confirm is not None and not await confirm(planned):
        outcome.refuse("switch not confirmed: nothing changed")
        yield emit.end(outcome)
        return
    locks = NodeLocks(ctx.pool, new_record("switch", recipe.name, ctx.lock_ttl_s))
    yield emit.started("lock")
    refused = await locks.acquire([*nodes, *targets])
    if refused:
        yield emit.finished("lock", ok=False, detail=str(refused[0]))
        outcome.refuse("; ".join(str(r) for r in refused))
        yield emit.end(outcome)
        return
    yield emit.finished("lock")
    try:
        if occupying:
            stopped = Outcome()
            async for event in stop_core(ctx, emit, survey, occupying, stopped):
                yield event
            if not stopped.ok:
                outcome.fail(f"could not stop the occupying lanes: {stopped.summary}")
        if outcome.ok:
            async for event in launch_core(
                ctx, emit, plan, outcome, sync_image=True, boot_timeout_s=boot_timeout_s
            ):
                yield event
        if not outcome.ok:
            now = await survey_lanes(ctx, nodes)
            lanes = now.lanes_on(nodes)
            running = (
                ", ".join(f"{lane} on {', '.join(sorted(now.targets({lane})))}" for lane in lanes)
                or f"nothing (no lane on {', '.join(nodes)})"
            )
            yield emit.notice(f"switch failed; running now: {running}", error=True)
            outcome.fail(f"{outcome.summary} — running now: {running}")
    finally:
        await asyncio.shield(locks.release())
    yield emit.end(outcome)
