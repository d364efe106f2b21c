"""`launch`: preflight, (sync), start the ranks workers-first, follow the boot, probe readiness.

Nothing is left half-up: a rank that exits, a decisive error line (traceback, NCCL error or
timeout), or a boot past its deadline removes every rank of the lane, and the failure names the
node and the decisive log line. The boot itself is followed in `boot_watch`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from dataclasses import replace

from cockpit.config.models import Recipe
from cockpit.errors import InputError
from cockpit.events import OpEvent
from cockpit.ops import model_sync
from cockpit.ops.boot_watch import READY_WATCH_S, STALL_TIMEOUT_S, Timing, follow_boot
from cockpit.ops.context import Emit, OpContext, OpLocks, Outcome
from cockpit.ops.facts import FactsCollector, NodeFacts
from cockpit.ops.locks import LockRecord
from cockpit.ops.ownership import (
    LaneMarker,
    new_marker,
    remove_markers_command,
    write_marker_command,
)
from cockpit.ops.preflight import lane_fit, preflight, snapshot_problems
from cockpit.ops.sync import survey, sync_core
from cockpit.plan import LanePlan, RankCommand, plan_lane
from cockpit.ssh import SshError
from cockpit.telemetry.docker_out import docker_error

START_TIMEOUT_S = 60.0


async def remove_ranks(ctx: OpContext, plan: LanePlan) -> list[str]:
    """`docker rm -f` every rank of the lane and its lane markers; returns the nodes where that
    could not be done."""
    lane = plan.recipe.name

    async def one(rank: RankCommand) -> str | None:
        try:
            await ctx.pool.run(rank.node, ["docker", "rm", "-f", "--", rank.container], timeout=60)
            await ctx.pool.run(rank.node, remove_markers_command(rank.node, [lane]), timeout=30)
        except SshError as exc:
            return f"{rank.node} ({exc.reason})"
        return None

    results = await asyncio.gather(*(one(r) for r in plan.ranks))
    return [r for r in results if r]


async def _sync_image(
    ctx: OpContext, plan: LanePlan, facts: Mapping[str, NodeFacts], outcome: Outcome
) -> AsyncIterator[OpEvent]:
    """`launch --sync-image`'s sync (the caller holds the cluster's locks); fails `outcome`."""
    recipe, cluster = plan.recipe, plan.cluster
    try:
        sync_plan, _ = await survey(ctx, recipe, cluster.nodes, None, facts)
    except InputError as exc:
        outcome.refuse(f"cannot sync the image: {exc}")
        return
    sync_outcome = Outcome()
    async for event in sync_core(
        ctx, Emit("sync", recipe.name, cluster.name), sync_plan, sync_outcome, None
    ):
        yield event
    if not sync_outcome.ok:
        outcome.fail(f"image sync failed: {sync_outcome.summary}")


async def _sync_model(ctx: OpContext, plan: LanePlan, outcome: Outcome) -> AsyncIterator[OpEvent]:
    """`launch --sync-model`'s copy of the snapshot from a node of the cluster that holds it (the
    caller holds the cluster's locks); fails `outcome`."""
    recipe, cluster = plan.recipe, plan.cluster
    emit = Emit("sync-model", recipe.name, cluster.name)
    try:
        sync_plan, facts, folders = await model_sync.survey(ctx, recipe, cluster, None)
    except InputError as exc:
        outcome.refuse(f"cannot sync the model: {exc}")
        return
    yield emit.info(sync_plan.describe())
    sync_outcome = Outcome()
    async for event in model_sync.sync_model_core(
        ctx, emit, recipe, cluster, sync_plan, facts, folders, sync_outcome
    ):
        yield event
    if not sync_outcome.ok:
        outcome.fail(f"model sync failed: {sync_outcome.summary}")


async def launch_core(
    ctx: OpContext,
    emit: Emit,
    plan: LanePlan,
    outcome: Outcome,
    *,
    owner: LockRecord,
    sync_image: bool = False,
    sync_model: bool = False,
    timing: Timing | None = None,
) -> AsyncIterator[OpEvent]:
    """Preflight → sync the image, copy the snapshot (if asked and needed) → start → boot →
    ready; the caller holds locks."""
    recipe, cluster = plan.recipe, plan.cluster
    collector = FactsCollector.of(ctx.pool, ctx.inventory, recipe, cluster)
    yield emit.started("preflight")
    facts = await collector.collect(cluster.nodes)
    yield emit.info(lane_fit(plan, facts).line())
    master_port = ctx.inventory.master_port_of(cluster)
    source = ctx.inventory.sources.get(recipe.name)
    recipe_file = str(source) if source else None
    failures = preflight(
        plan, facts, production_clusters=ctx.production_clusters, will_sync=sync_image,
        will_sync_model=sync_model, master_port=master_port, recipe_file=recipe_file,
    )  # fmt: skip
    image_missing = any(f.reachable and not f.holds_pinned for f in facts.values())
    model_missing = any(
        f.reachable and snapshot_problems(recipe.model, f) for f in facts.values()
    )  # fmt: skip
    if not failures and (image_missing or model_missing):
        if image_missing:
            yield emit.finished("preflight", detail="image missing on some nodes: syncing first")
            async for event in _sync_image(ctx, plan, facts, outcome):
                yield event
        if model_missing and outcome.ok:
            yield emit.finished("preflight", detail="snapshot missing on some nodes: copying first")
            async for event in _sync_model(ctx, plan, outcome):
                yield event
        if not outcome.ok:
            return
        yield emit.started("preflight")
        facts = await collector.collect(cluster.nodes)
        failures = preflight(
            plan, facts, production_clusters=ctx.production_clusters, master_port=master_port,
            recipe_file=recipe_file,
        )  # fmt: skip
    if failures:
        for failure in failures:
            yield emit.notice(
                str(failure), ",".join(failure.nodes) or None, error=True, check=failure.check
            )
        yield emit.finished("preflight", ok=False, detail=f"{len(failures)} check(s) failed")
        outcome.refuse(
            f"preflight refused {recipe.name} on {cluster.name}: "
            + "; ".join(f.message for f in failures)
        )
        return
    yield emit.finished("preflight", detail="all checks passed")
    plan = with_resolved_image(plan, {f.full_ref for f in facts.values() if f.full_ref})
    # Leftovers of an earlier run of this lane (exited containers) would block the names.
    if any(
        row.labels.get("cockpit.lane") == recipe.name
        for f in facts.values()
        for row in f.containers
    ):
        await remove_ranks(ctx, plan)
    started = _start_and_boot(ctx, emit, plan, outcome, timing or Timing(), owner)
    try:
        async for event in started:
            yield event
    finally:
        left = [] if outcome.ok else await asyncio.shield(remove_ranks(ctx, plan))
    if left:
        yield emit.notice(f"could not remove the lane's containers on {', '.join(left)}",
                          error=True)  # fmt: skip
    elif not outcome.ok:
        yield emit.info(f"rolled back: every rank of {recipe.name} removed")


async def _mark(ctx: OpContext, markers: list[LaneMarker]) -> list[str]:
    """Write the lane markers on their nodes; returns the problems ("node: why")."""

    async def one(marker: LaneMarker) -> str | None:
        try:
            result = await ctx.pool.run(marker.node, write_marker_command(marker), timeout=30)
        except SshError as exc:
            return f"{marker.node}: {exc.reason}"
        return None if result.ok else f"{marker.node}: {result.stderr.strip() or 'write failed'}"

    return [p for p in await asyncio.gather(*(one(m) for m in markers)) if p]


async def _start_and_boot(
    ctx: OpContext,
    emit: Emit,
    plan: LanePlan,
    outcome: Outcome,
    timing: Timing,
    owner: LockRecord,
) -> AsyncIterator[OpEvent]:
    """Record the launch on the nodes (lane markers), start the ranks workers-first, follow the
    boot, mark the lane ready; sets `outcome`."""
    outcome.fail("launch interrupted")  # until the boot says otherwise
    markers = [new_marker(plan.recipe.name, plan.cluster.name, r.node, owner) for r in plan.ranks]
    problems = await _mark(ctx, markers)
    if problems:
        yield emit.notice(f"could not record the launch on the nodes: {'; '.join(problems)}",
                          error=True)  # fmt: skip
        outcome.fail(f"could not record the launch on {problems[0]}")
        return
    for rank in plan.launch_order:
        yield emit.started("start", rank.node)
        try:
            # the env goes to a 0600 file through stdin, never on the command line (ps)
            result = await ctx.pool.run(
                rank.node, rank.start_line, timeout=START_TIMEOUT_S, input=rank.env_file
            )
        except SshError as exc:
            result = None
            problem = exc.reason
        else:
            problem = docker_error(result.stderr, "docker run failed")  # not the help hint
        if result is None or not result.ok:
            yield emit.finished("start", rank.node, ok=False, detail=problem)
            yield emit.notice(f"rank {rank.rank} on {rank.node} did not start", rank.node,
                              problem, error=True)  # fmt: skip
            outcome.fail(f"rank {rank.rank} on {rank.node} did not start: {problem}")
            return
        yield emit.finished("start", rank.node, detail=result.stdout.strip()[:12])
    async for event in follow_boot(ctx, emit, plan, outcome, timing):
        yield event
    if outcome.ok:
        problems = await _mark(ctx, [m.ready() for m in markers])
        for problem in problems:  # the lane serves: a marker that stays "launching" is a warning
            yield emit.notice(f"could not mark the lane ready on {problem}")


def with_resolved_image(plan: LanePlan, refs: set[str]) -> LanePlan:
    """The plan with the recipe's (possibly prefix-only) digest reference replaced by the full
    one every node resolved it to; unchanged unless exactly one full reference was found."""
    if len(refs) != 1:
        return plan
    full, ref = refs.pop(), plan.recipe.image.ref
    ranks = tuple(
        replace(r, argv=tuple(full if word == ref else word for word in r.argv)) for r in plan.ranks
    )
    return replace(plan, ranks=ranks)


async def _memory_line(ctx: OpContext, plan: LanePlan) -> str:
    """The memory fit for the plan, from the head's snapshot (read only: the plan may be
    declined); preflight reads every node again under the locks."""
    head = plan.ranks[0].node
    collector = FactsCollector.of(ctx.pool, ctx.inventory, plan.recipe, plan.cluster)
    return lane_fit(plan, {head: await collector.model_files(head)}).line()


def dry_run_events(emit: Emit, plan: LanePlan) -> list[OpEvent]:
    return [
        emit.info(f"rank {r.rank} on {r.node}: {r.display()}", r.node) for r in plan.launch_order
    ]


async def launch(
    ctx: OpContext,
    recipe: Recipe,
    cluster_name: str,
    *,
    sync_image: bool = False,
    sync_model: bool = False,
    dry_run: bool = False,
    boot_timeout_s: float | None = None,
    stall_timeout_s: float = STALL_TIMEOUT_S,
    ready_watch_s: float = READY_WATCH_S,
) -> AsyncIterator[OpEvent]:
    """The `launch` operation: takes the nodes' locks, runs `launch_core`, releases them."""
    timing = Timing(boot_timeout_s, stall_timeout_s, ready_watch_s)
    emit = Emit("launch", recipe.name, cluster_name)
    outcome = Outcome()
    try:
        plan = plan_lane(ctx.inventory, recipe, ctx.inventory.operable(cluster_name))
    except InputError as exc:
        for event in emit.refusal(outcome, str(exc)):
            yield event
        return
    syncs = (*(("sync",) if sync_image else ()), *(("sync-model",) if sync_model else ()))
    steps = ("lock", "preflight", *syncs, "start", "boot", "ready", "watch")
    nodes = [r.node for r in plan.launch_order]
    memory = "" if dry_run else await _memory_line(ctx, plan)
    yield emit.planned(
        steps,
        f"{recipe.name} on {cluster_name}: start {', '.join(nodes)} (head last), "
        f"serve at {plan.endpoint}",
        memory,
    )
    if dry_run:
        for event in dry_run_events(emit, plan):
            yield event
        outcome.done("dry run: nothing changed")
        yield emit.end(outcome)
        return
    locks = OpLocks(ctx, emit)
    async for event in locks.acquire(plan.cluster.nodes, outcome):
        yield event
    if not outcome.ok:
        yield emit.end(outcome)
        return
    try:
        async for event in launch_core(
            ctx, emit, plan, outcome, owner=locks.record, sync_image=sync_image,
            sync_model=sync_model, timing=timing,
        ):  # fmt: skip
            yield event
    finally:
        await asyncio.shield(locks.release())
    yield emit.end(outcome)
