"""A launch's boot, followed from the ranks' logs to ready: probe the head, then watch every
rank stay up.

Apart from `launch` (preflight, start, rollback) because it is the part that decides: a rank that
exits, a decisive error line, a stall or a deadline ends it with the node and the line to blame;
`switch` waits with the same timings.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from cockpit.events import OpEvent
from cockpit.ops.context import Emit, OpContext, Outcome
from cockpit.ops.history import eta_seconds
from cockpit.ops.ranks import RankView, blame, docker_time, last_progress, stalled
from cockpit.ops.readiness import base_url, health, probe
from cockpit.plan import LanePlan
from cockpit.ssh import SshError
from cockpit.telemetry.boot import BootPhase, BootState
from cockpit.telemetry.docker_out import follow_logs_command, parse_container_inspect

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


async def follow_boot(
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
            # the probe's answer before the update read with it: it came first (a head that dies
            # right after answering is then a death after ready, as it was)
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
                    probing = asyncio.create_task(
                        probe(url, plan.recipe.serve.served_model_name, plan.api_key)
                    )
                if probing is not None:
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
