"""`launch`: preflight, (sync), start the ranks workers-first, follow the boot, probe readiness.

Nothing is left half-up: a rank that exits, a decisive error line (traceback, NCCL error or
timeout), or a boot past its deadline removes every rank of the lane, and the failure names the
node and the decisive log line.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace

from cockpit.config.models import Recipe
from cockpit.errors import InputError
from cockpit.ops.context import Emit, OpContext, Outcome
from cockpit.ops.events import OpEvent
from cockpit.ops.facts import FactsCollector
from cockpit.ops.history import eta_seconds
from cockpit.ops.locks import NodeLocks, new_record
from cockpit.ops.preflight import preflight
from cockpit.ops.readiness import base_url, probe
from cockpit.ops.sync import survey, sync_core
from cockpit.plan import LanePlan, RankCommand, plan_lane, redact_argv
from cockpit.ssh import SshError
from cockpit.telemetry.boot import BootPhase, BootState, BootTracker
from cockpit.telemetry.docker_out import docker_error, parse_container_inspect

START_TIMEOUT_S = 60.0
DEFAULT_BOOT_TIMEOUT_S = 3600.0
PROBE_EVERY_S = 0.5
TAIL_LINES = 40
SETTLE_S = 1.5


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


@dataclass
class _Rank:
    """A rank's boot as the watcher sees it."""

    command: RankCommand
    tracker: BootTracker
    tail: deque[str]


Update = tuple[str, "_Rank", BootState]


async def _watch(ctx: OpContext, rank: _Rank, queue: asyncio.Queue[Update]) -> None:
    """Follow the rank's log until its container ends; post every state change."""
    command = shlex.join(["docker", "logs", "-f", rank.command.container]) + " 2>&1"
    previous = rank.tracker.state
    try:
        async with ctx.pool.stream(rank.command.node, command) as lines:
            async for line in lines:
                if line.strip():
                    rank.tail.append(line)
                state = rank.tracker.feed(line)
                if state != previous:
                    previous = state
                    await queue.put(("state", rank, state))
    except SshError as exc:
        rank.tail.append(f"log stream lost: {exc.reason}")
    await queue.put(("ended", rank, rank.tracker.state))


async def _exit_code(ctx: OpContext, rank: RankCommand) -> int | None:
    with contextlib.suppress(SshError):
        result = await ctx.pool.run(rank.node, ["docker", "inspect", "--", rank.container])
        infos = parse_container_inspect(result.stdout)
        if infos and infos[0].state and not infos[0].state.running:
            return infos[0].state.exit_code
    return None


_KIND_RANK = {"traceback": 0, "error": 1, "exception": 2, "timeout": 2}


def culprit(ranks: list[_Rank], first: _Rank) -> _Rank:
    """The rank whose log holds the root cause: the most decisive failure line wins (an exception
    or NCCL timeout beats an ERROR line such as "worker died"); ties go to the first to fail."""

    def score(rank: _Rank) -> int:
        kind = rank.tracker.state.failed_kind
        return _KIND_RANK[kind] if kind else -1

    return max([first, *(r for r in ranks if r is not first)], key=score)


def _decisive(rank: _Rank) -> str:
    state = rank.tracker.state
    if state.failed_line:
        return state.failed_line
    return rank.tail[-1] if rank.tail else "(no log output)"


async def remove_ranks(ctx: OpContext, plan: LanePlan) -> list[str]:
    """`docker rm -f` every rank of the lane; returns the nodes where that could not be done."""

    async def one(rank: RankCommand) -> str | None:
        try:
            await ctx.pool.run(rank.node, ["docker", "rm", "-f", "--", rank.container], timeout=60)
        except SshError as exc:
            return f"{rank.node} ({exc.reason})"
        return None

    results = await asyncio.gather(*(one(r) for r in plan.ranks))
    return [r for r in results if r]


async def _boot(
    ctx: OpContext, emit: Emit, plan: LanePlan, outcome: Outcome, boot_timeout_s: float | None
) -> AsyncIterator[OpEvent]:
    """Follow every rank's log to ready (or failure); sets `outcome`."""
    previous = ctx.history.last_seconds(plan.recipe.name, plan.cluster.name)
    timeout_s = boot_deadline(previous, boot_timeout_s)
    started = time.monotonic()
    deadline = started + timeout_s
    queue: asyncio.Queue[Update] = asyncio.Queue()
    ranks = [_Rank(r, BootTracker(), deque(maxlen=TAIL_LINES)) for r in plan.ranks]
    tasks = [asyncio.create_task(_watch(ctx, rank, queue)) for rank in ranks]
    phases = {r.command.rank: BootPhase.STARTING for r in ranks}
    step = "boot"  # then "ready" once the head says so: /health and a chat completion
    yield emit.started(step)
    for rank in ranks:
        yield emit.started(f"boot/{BootPhase.STARTING.value}", rank.command.node)
    url: str | None = None
    next_probe = 0.0
    head_ready = False
    last_problem = "the head did not report ready"
    try:
        while True:
            now = time.monotonic()
            if now >= deadline:
                slowest = min(ranks, key=lambda r: list(BootPhase).index(r.tracker.state.phase))
                line = _decisive(slowest)
                yield emit.notice(
                    f"boot deadline of {timeout_s:.0f} s passed on {slowest.command.node} "
                    f"({describe(slowest.tracker.state)}); {last_problem}",
                    slowest.command.node, line, error=True,
                )  # fmt: skip
                outcome.fail(f"{slowest.command.node}: boot deadline of {timeout_s:.0f} s passed")
                yield emit.finished(step, ok=False, detail=outcome.summary)
                return
            try:
                kind, rank, state = await asyncio.wait_for(
                    queue.get(), min(PROBE_EVERY_S, deadline - now)
                )
            except TimeoutError:
                kind = ""
            if kind:
                node = rank.command.node
                if state.phase is not phases[rank.command.rank]:
                    yield emit.finished(f"boot/{phases[rank.command.rank].value}", node)
                    phases[rank.command.rank] = state.phase
                    yield emit.started(f"boot/{state.phase.value}", node)
                elapsed = time.monotonic() - started
                yield emit.progress(
                    "boot", node, done=state.percent or 0.0,
                    total=100.0 if state.percent is not None else None, unit="%",
                    eta_s=eta_seconds(previous, elapsed), message=describe(state),
                )  # fmt: skip
                if state.failed or kind == "ended":
                    # failing ranks get a moment to print their root cause (the exception
                    # after a Traceback, the crashed worker's own error before "worker died")
                    await asyncio.wait(tasks, timeout=SETTLE_S)
                    rank = culprit(ranks, rank)
                    node, number = rank.command.node, rank.command.rank
                    code = await _exit_code(ctx, rank.command)
                    why = "failed" if rank.tracker.state.failed else "exited"
                    why += f" (exit code {code})" if code is not None else ""
                    line = _decisive(rank)
                    yield emit.notice(f"rank {number} on {node} {why}", node, line, error=True)
                    outcome.fail(f"rank {number} on {node} {why}: {line}")
                    yield emit.finished(step, ok=False, detail=f"rank {number} on {node} {why}")
                    return
                if rank.command.rank == 0 and state.ready and not head_ready:
                    head_ready = True
                    yield emit.finished(step, detail=describe(state))
                    step = "ready"
                    yield emit.started(step)
            if head_ready and time.monotonic() >= next_probe:
                url = url or await base_url(ctx.pool, plan)
                problem = await probe(url, plan.recipe.serve.served_model_name)
                if problem is None:
                    break
                last_problem = f"readiness: {problem}"
                next_probe = time.monotonic() + PROBE_EVERY_S
        seconds = time.monotonic() - started
        for rank in ranks:
            yield emit.finished(f"boot/{phases[rank.command.rank].value}", rank.command.node)
            if rank.command.rank:  # headless workers never print "ready": the head speaks for all
                yield emit.progress("boot", rank.command.node, done=100.0, total=100.0, unit="%",
                                    message="worker serving")  # fmt: skip
        yield emit.finished(step, detail=f"/health and a chat completion answered at {url}")
        ctx.history.record(plan.recipe.name, plan.cluster.name, seconds, time.time())
        outcome.done(f"{plan.recipe.name} ready at {plan.endpoint} after {seconds:.1f} s of boot")
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def launch_core(
    ctx: OpContext,
    emit: Emit,
    plan: LanePlan,
    outcome: Outcome,
    *,
    sync_image: bool = False,
    boot_timeout_s: float | None = None,
) -> AsyncIterator[OpEvent]:
    """Preflight → sync (if asked and needed) → start → boot → ready; the caller holds locks."""
    recipe, cluster = plan.recipe, plan.cluster
    collector = FactsCollector(
        ctx.pool, recipe, ctx.inventory.model_cache_of(cluster),
        node_caches=ctx.inventory.model_caches(cluster),
    )  # fmt: skip
    yield emit.started("preflight")
    facts = await collector.collect(cluster.nodes)
    master_port = ctx.inventory.master_port_of(cluster)
    failures = preflight(
        plan, facts, production_clusters=ctx.production_clusters, will_sync=sync_image,
        master_port=master_port,
    )  # fmt: skip
    if not failures and any(not f.has_digest for f in facts.values()):
        yield emit.finished("preflight", detail="image missing on some nodes: syncing first")
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
            return
        yield emit.started("preflight")
        facts = await collector.collect(cluster.nodes)
        failures = preflight(
            plan, facts, production_clusters=ctx.production_clusters, master_port=master_port
        )
    if failures:
        for failure in failures:
            yield emit.notice(str(failure), ",".join(failure.nodes) or None, error=True)
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
    started = _start_and_boot(ctx, emit, plan, outcome, boot_timeout_s)
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


async def _start_and_boot(
    ctx: OpContext, emit: Emit, plan: LanePlan, outcome: Outcome, boot_timeout_s: float | None
) -> AsyncIterator[OpEvent]:
    """Start the ranks workers-first, then follow the boot; sets `outcome`."""
    outcome.fail("launch interrupted")  # until the boot says otherwise
    for rank in plan.launch_order:
        yield emit.started("start", rank.node)
        try:
            result = await ctx.pool.run(rank.node, rank.argv, timeout=START_TIMEOUT_S)
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
    async for event in _boot(ctx, emit, plan, outcome, boot_timeout_s):
        yield event


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


def dry_run_events(emit: Emit, plan: LanePlan) -> list[OpEvent]:
    return [
        emit.info(f"rank {r.rank} on {r.node}: {shlex.join(redact_argv(r.argv))}", r.node)
        for r in plan.launch_order
    ]


async def launch(
    ctx: OpContext,
    recipe: Recipe,
    cluster_name: str,
    *,
    sync_image: bool = False,
    dry_run: bool = False,
    boot_timeout_s: float | None = None,
) -> AsyncIterator[OpEvent]:
    """The `launch` operation: takes the nodes' locks, runs `launch_core`, releases them."""
    emit = Emit("launch", recipe.name, cluster_name)
    outcome = Outcome()
    try:
        plan = plan_lane(ctx.inventory, recipe, ctx.inventory.cluster(cluster_name))
    except InputError as exc:
        for event in emit.refusal(outcome, str(exc)):
            yield event
        return
    steps = ("lock", "preflight", *(("sync",) if sync_image else ()), "start", "boot", "ready")
    nodes = [r.node for r in plan.launch_order]
    yield emit.planned(
        steps,
        f"{recipe.name} on {cluster_name}: start {', '.join(nodes)} (head last), "
        f"serve at {plan.endpoint}",
    )
    if dry_run:
        for event in dry_run_events(emit, plan):
            yield event
        outcome.done("dry run: nothing changed")
        yield emit.end(outcome)
        return
    locks = NodeLocks(ctx.pool, new_record("launch", recipe.name, ctx.lock_ttl_s))
    yield emit.started("lock")
    refused = await locks.acquire(plan.cluster.nodes)
    for node, why in locks.broken:
        yield emit.notice(why, node)
    if refused:
        yield emit.finished("lock", ok=False, detail=str(refused[0]))
        outcome.refuse("; ".join(str(r) for r in refused))
        yield emit.end(outcome)
        return
    yield emit.finished("lock")
    try:
        async for event in launch_core(
            ctx, emit, plan, outcome, sync_image=sync_image, boot_timeout_s=boot_timeout_s
        ):
            yield event
    finally:
        await asyncio.shield(locks.release())
    yield emit.end(outcome)
