"""`launch`: preflight, (sync), start the ranks workers-first, follow the boot, probe readiness.

Nothing is left half-up: a rank that exits, a decisive error line (traceback, NCCL error or
timeout), or a boot past its deadline removes every rank of the lane, and the failure names the
node and the decisive log line.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, replace

from cockpit.config.models import Recipe
from cockpit.errors import InputError
from cockpit.events import OpEvent
from cockpit.ops import model_sync
from cockpit.ops.context import Emit, OpContext, OpLocks, Outcome
from cockpit.ops.facts import FactsCollector, NodeFacts
from cockpit.ops.history import eta_seconds
from cockpit.ops.locks import LockRecord
from cockpit.ops.ownership import (
    LaneMarker,
    new_marker,
    remove_markers_command,
    write_marker_command,
)
from cockpit.ops.preflight import lane_fit, preflight, snapshot_problems
from cockpit.ops.ranks import RankView, blame, docker_time, last_progress, stalled
from cockpit.ops.readiness import base_url, health, probe
from cockpit.ops.sync import survey, sync_core
from cockpit.plan import LanePlan, RankCommand, plan_lane
from cockpit.ssh import SshError
from cockpit.telemetry.boot import BootPhase, BootState
from cockpit.telemetry.docker_out import (
    docker_error,
    follow_logs_command,
    parse_container_inspect,
)

START_TIMEOUT_S = 60.0
DEFAULT_BOOT_TIMEOUT_S = 3600.0
PROBE_EVERY_S = 0.5
TICK_S = 0.25
SETTLE_S = 1.5
STALL_TIMEOUT_S = 600.0
"""No rank's boot moved (phase, percent, counts) and the head did not answer for this long: hung.
As long as NCCL's own collective timeout: a real boot is never that quiet (the autotune, weights
and graph capture all print progress)."""
READY_WATCH_S = 3.0
"""After ready, every rank must still run (and the head answer /health) this long: an engine that
dies at once (right after the one-token probe) is a failed launch, not a ready one."""


def boot_deadline(previous: float | None, explicit: float | None) -> float:
    """The explicit deadline, else three times the previous boot (at least 10 min), else 1 h."""
    if explicit is not None:
        return explicit
    return max(600.0, 3 * previous) if previous else DEFAULT_BOOT_TIMEOUT_S


def describe(state: BootState) -> str:
    """One short line for a rank's boot state (what a progress bar shows)."""
    match state.phase:
        case BootPhase.LOADING_WEIGHTS:
            return f"loading weights {state.weights_pct or 0:.0f}%"
        case BootPhase.AUTOTUNE:
            return f"autotune {state.autotune_done}/{state.autotune_total}"
        case BootPhase.CAPTURING_GRAPHS:
            return f"capturing CUDA graphs {state.graph_pct or 0:.0f}%"
        case BootPhase.READY:
            kv = f", KV pool {state.kv_pool_tokens:,} tokens" if state.kv_pool_tokens else ""
            return f"ready{kv}"
        case BootPhase.FAILED:
            return f"failed: {state.failed_line}"
    extra = f" (KV pool {state.kv_pool_tokens:,} tokens)" if state.kv_pool_tokens else ""
    return f"{state.phase.value}{extra}"


@dataclass(frozen=True)
class Timing:
    """How long a launch waits, and for what (each has a CLI option)."""

    boot_timeout_s: float | None = None  # None: from the lane's previous boot (`boot_deadline`)
    stall_timeout_s: float = STALL_TIMEOUT_S  # no rank progressed for this long: hung
    ready_watch_s: float = READY_WATCH_S  # after ready, every rank must stay up this long


Update = tuple[str, RankView, BootState]  # the state as of that line: no phase is skipped


async def _watch(ctx: OpContext, rank: RankView, queue: asyncio.Queue[Update]) -> None:
    """Follow the rank's log (with the node's timestamps) until its container ends."""
    command = follow_logs_command(rank.command.container, timestamps=True)
    try:
        async with ctx.pool.stream(rank.node, command) as lines:
            async for line in lines:
                if rank.feed(line, time.monotonic()):
                    await queue.put(("line", rank, rank.state))
    except SshError as exc:
        rank.tail.append(f"log stream lost: {exc.reason}")
    rank.ended = True
    await queue.put(("ended", rank, rank.state))


async def _inspect(ctx: OpContext, rank: RankView) -> None:
    """Mark the rank ended (with its exit code and end time) when its container is not running."""
    with contextlib.suppress(SshError):
        result = await ctx.pool.run(rank.node, ["docker", "inspect", "--", rank.command.container])
        infos = parse_container_inspect(result.stdout)
        state = infos[0].state if infos else None
        if not infos or (state is not None and not state.running):
            rank.ended = True
        if state is not None and not state.running:
            rank.exit_code = state.exit_code
            rank.ended_at = docker_time(state.finished_at)


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


async def _failure(
    ctx: OpContext,
    emit: Emit,
    ranks: list[RankView],
    tasks: list[asyncio.Task[None]],
    outcome: Outcome,
) -> AsyncIterator[OpEvent]:
    """A rank failed: give the others a moment to print (a crash takes its peers down), then
    blame the earliest failure and list the others as its consequences; sets `outcome`."""
    await asyncio.wait(tasks, timeout=SETTLE_S)
    failed = [r for r in ranks if r.failed]
    await asyncio.gather(*(_inspect(ctx, r) for r in failed))
    cause, victims = blame(failed)
    short = f"rank {cause.rank} on {cause.node} {cause.failure()}"
    yield emit.notice(short, cause.node, cause.decisive(), error=True)
    for victim in victims:
        yield emit.notice(
            f"consequence: rank {victim.rank} on {victim.node} {victim.failure()} after "
            f"rank {cause.rank} on {cause.node}",
            victim.node, victim.decisive(),
        )  # fmt: skip
    summary = f"{short}: {cause.decisive()}"
    if victims:
        names = ", ".join(f"rank {v.rank} on {v.node}" for v in victims)
        summary += f" (then {names} failed as a consequence)"
    outcome.fail(summary)
    yield emit.finished("boot", ok=False, detail=short)


def _stall(
    emit: Emit,
    ranks: list[RankView],
    head_serving: bool,
    timing: Timing,
    problem: str,
    outcome: Outcome,
) -> list[OpEvent]:
    """No progress for the stall timeout: the rank the lane waits on is hung at its phase."""
    rank = stalled(ranks, head_serving)
    phase = rank.state.phase.value
    why = f" ({problem})" if head_serving and rank.rank == 0 else ""
    message = f"{rank.who} hung at {phase}: no progress for {timing.stall_timeout_s:.0f} s{why}"
    outcome.fail(message)
    line = rank.state.hang_hint or (rank.tail[-1] if rank.tail else "(no log output)")
    return [
        emit.notice(message, rank.node, line, error=True),
        emit.finished("boot", ok=False, detail=message),
    ]


async def _boot(
    ctx: OpContext, emit: Emit, plan: LanePlan, outcome: Outcome, timing: Timing
) -> AsyncIterator[OpEvent]:
    """Follow every rank to ready, probe the head, watch every rank stay up; sets `outcome`."""
    previous = ctx.history.last_seconds(plan.recipe.name, plan.cluster.name)
    timeout_s = boot_deadline(previous, timing.boot_timeout_s)
    started = time.monotonic()
    deadline = started + timeout_s
    queue: asyncio.Queue[Update] = asyncio.Queue()
    ranks = [RankView(r, started) for r in plan.ranks]
    head = next(r for r in ranks if r.rank == 0)
    workers = [r for r in ranks if r.rank != 0]
    tasks = [asyncio.create_task(_watch(ctx, rank, queue)) for rank in ranks]
    phases = {r.rank: BootPhase.STARTING for r in ranks}
    yield emit.started("boot")
    for rank in ranks:
        yield emit.started(f"boot/{BootPhase.STARTING.value}", rank.node)
    url: str | None = None
    probing: asyncio.Task[str | None] | None = None
    next_probe = 0.0
    serving_at: float | None = None  # the head answered and every worker is past NCCL init
    head_ready = False
    problem = "the head did not report ready"
    try:
        while True:
            now = time.monotonic()
            if now >= deadline:
                rank = stalled(ranks, head_ready)
                line = rank.decisive() if rank.failed else (rank.tail[-1] if rank.tail else "")
                message = (f"boot deadline of {timeout_s:.0f} s passed: {rank.who} at "
                           f"{describe(rank.state)}; {problem}")  # fmt: skip
                yield emit.notice(message, rank.node, line, error=True)
                outcome.fail(f"{rank.who}: boot deadline of {timeout_s:.0f} s passed ({problem})")
                yield emit.finished("boot", ok=False, detail=outcome.summary)
                return
            try:  # not wait_for: on 3.11 it drops a signal's cancel that meets a queued update
                async with asyncio.timeout(min(TICK_S, deadline - now)):
                    kind, rank, state = await queue.get()
            except TimeoutError:
                kind = ""
            if kind:
                if state.phase is not phases[rank.rank]:
                    yield emit.finished(f"boot/{phases[rank.rank].value}", rank.node)
                    phases[rank.rank] = state.phase
                    yield emit.started(f"boot/{state.phase.value}", rank.node)
                yield emit.progress(
                    "boot", rank.node, done=state.percent or 0.0,
                    total=100.0 if state.percent is not None else None, unit="%",
                    eta_s=eta_seconds(previous, time.monotonic() - started),
                    message=describe(state),
                )  # fmt: skip
                if rank.failed:
                    async for event in _failure(ctx, emit, ranks, tasks, outcome):
                        yield event
                    return
                if rank is head and state.ready and not head_ready:
                    head_ready = True
                    yield emit.finished("boot", detail=describe(state))
                    yield emit.started("ready")
            now = time.monotonic()
            if head_ready and serving_at is None:
                if probing is None and now >= next_probe:
                    url = url or await base_url(ctx.pool, plan)
                    probing = asyncio.create_task(probe(url, plan.recipe.serve.served_model_name))
                if probing is not None and probing.done():
                    answer, probing = probing.result(), None
                    behind = [w for w in workers if not w.past_nccl]
                    if answer is None and not behind:
                        serving_at = time.monotonic()
                        yield emit.finished("ready", detail=f"/health and a chat completion "
                                            f"answered at {url}")  # fmt: skip
                        yield emit.started("watch")
                    else:
                        problem = (f"readiness: {answer}" if answer else
                                   f"{behind[0].who} is not past its NCCL init")  # fmt: skip
                        next_probe = time.monotonic() + PROBE_EVERY_S
                elif probing is not None:
                    problem = "the one-token chat completion got no answer"
            if serving_at is not None and now >= serving_at + timing.ready_watch_s:
                await asyncio.gather(*(_inspect(ctx, r) for r in ranks))
                answer = await health(url or plan.endpoint)
                if not any(r.ended for r in ranks) and answer is None:
                    break
                if answer is not None and not any(r.failed for r in ranks):
                    head.failure_seen = True
                    head.tail.append(f"stopped answering after ready: {answer}")
                async for event in _failure(ctx, emit, ranks, tasks, outcome):
                    yield event
                return
            if serving_at is None and now - last_progress(ranks) >= timing.stall_timeout_s:
                for event in _stall(emit, ranks, head_ready, timing, problem, outcome):
                    yield event
                return
        seconds = serving_at - started
        for rank in ranks:
            yield emit.finished(f"boot/{phases[rank.rank].value}", rank.node)
            if rank.rank:  # headless workers never print "ready": the head speaks for all
                yield emit.progress("boot", rank.node, done=100.0, total=100.0, unit="%",
                                    message="worker serving")  # fmt: skip
        yield emit.finished("watch", detail=f"every rank still up {timing.ready_watch_s:g} s "
                            "after ready")  # fmt: skip
        ctx.history.record(plan.recipe.name, plan.cluster.name, seconds, time.time())
        outcome.done(f"{plan.recipe.name} ready at {plan.endpoint} after {seconds:.1f} s of boot")
    finally:
        for task in [*tasks, *([probing] if probing else [])]:
            task.cancel()
        await asyncio.gather(*tasks, *([probing] if probing else []), return_exceptions=True)


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
    async for event in _boot(ctx, emit, plan, outcome, timing):
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
        plan = plan_lane(ctx.inventory, recipe, ctx.inventory.cluster(cluster_name))
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
