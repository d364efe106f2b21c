"""`stop`: remove a lane's containers on every node, verify the GPUs are released.

Idempotent (nothing to stop is a success); an unreachable node is reported without holding up the
others. `--cluster C` stops every cockpit lane that has a container on C's nodes, on all of that
lane's nodes (a lane is never stopped by halves).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass

from cockpit.errors import InputError
from cockpit.events import OpEvent
from cockpit.ops.context import Emit, OpContext, OpLocks, Outcome
from cockpit.ops.ownership import remove_markers_command
from cockpit.ssh import SshError
from cockpit.status.probe import APPS_QUERY
from cockpit.telemetry.docker_out import ContainerRow, parse_ps
from cockpit.telemetry.gpu import parse_compute_apps

GPU_RELEASE_TIMEOUT_S = 30.0
PS = ["docker", "ps", "-a", "--filter", "label=cockpit.lane", "--format", "{{json .}}"]


@dataclass(frozen=True)
class LaneSurvey:
    """Cockpit containers per node, and the nodes that did not answer."""

    containers: dict[str, list[ContainerRow]]
    unreachable: dict[str, str]

    def lanes_on(self, nodes: Iterable[str]) -> set[str]:
        return {
            lane
            for node in nodes
            for row in self.containers.get(node, [])
            if (lane := row.labels.get("cockpit.lane"))
        }

    def targets(self, lanes: set[str]) -> dict[str, list[str]]:
        """node → container names of these lanes there."""
        out: dict[str, list[str]] = {}
        for node, rows in self.containers.items():
            names = [r.names for r in rows if r.labels.get("cockpit.lane") in lanes]
            if names:
                out[node] = names
        return out


async def survey_lanes(ctx: OpContext, nodes: Iterable[str]) -> LaneSurvey:
    containers: dict[str, list[ContainerRow]] = {}
    unreachable: dict[str, str] = {}
    results = await ctx.pool.run_all(list(nodes), PS, timeout=20)
    for node, result in results.items():
        if isinstance(result, SshError):
            unreachable[node] = result.reason
        else:
            containers[node] = parse_ps(result.stdout)
    return LaneSurvey(containers, unreachable)


async def _gpu_released(ctx: OpContext, node: str, timeout_s: float) -> str | None:
    """None once nvidia-smi lists no compute process; else what still holds the GPU."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            result = await ctx.pool.run(node, APPS_QUERY, timeout=15)
        except SshError as exc:
            return exc.reason
        apps = parse_compute_apps(result.stdout)
        if not apps:
            return None
        if time.monotonic() >= deadline:
            return "GPU still busy: " + ", ".join(f"{a.process_name} (pid {a.pid})" for a in apps)
        await asyncio.sleep(0.5)


async def _stop_node(ctx: OpContext, node: str, names: list[str], lanes: set[str]) -> str | None:
    try:
        result = await ctx.pool.run(node, ["docker", "rm", "-f", "--", *names], timeout=60)
        if result.ok or "No such container" in result.stderr:
            await ctx.pool.run(node, remove_markers_command(node, sorted(lanes)), timeout=30)
    except SshError as exc:
        return exc.reason
    if not result.ok and "No such container" not in result.stderr:
        return (result.stderr.strip().splitlines() or ["docker rm failed"])[-1]
    return await _gpu_released(ctx, node, GPU_RELEASE_TIMEOUT_S)


async def stop_core(
    ctx: OpContext, emit: Emit, survey: LaneSurvey, lanes: set[str], outcome: Outcome
) -> AsyncIterator[OpEvent]:
    """Remove the lanes' containers on every node concurrently; sets `outcome`."""
    targets = survey.targets(lanes)
    for node in targets:
        yield emit.started("stop", node)
    problems: dict[str, str] = dict(survey.unreachable)
    for node, why in survey.unreachable.items():
        yield emit.notice(f"{node} is unreachable: {why}", node, error=True)

    async def one(node: str, names: list[str]) -> tuple[str, str | None]:
        return node, await _stop_node(ctx, node, names, lanes)

    for next_done in asyncio.as_completed([one(n, names) for n, names in targets.items()]):
        node, problem = await next_done
        if problem is None:
            yield emit.finished("stop", node, detail="containers removed, GPU released")
        else:
            problems[node] = problem
            yield emit.finished("stop", node, ok=False, detail=problem)
            yield emit.notice(f"{node}: {problem}", node, error=True)
    what = ", ".join(sorted(lanes)) or "no lane"
    if problems:
        outcome.fail(f"stopped {what} except on {', '.join(sorted(problems))}")
    elif targets:
        outcome.done(f"stopped {what} on {', '.join(sorted(targets))}")
    else:
        outcome.done(f"nothing to stop ({what} runs nowhere)")


async def stop(
    ctx: OpContext, *, lane: str | None = None, cluster: str | None = None
) -> AsyncIterator[OpEvent]:
    """The `stop` operation, by lane (everywhere it runs) or by cluster (every lane on it)."""
    emit = Emit("stop", lane or "", cluster or "")
    outcome = Outcome()
    try:
        if (lane is None) == (cluster is None):
            raise InputError("stop needs exactly one of --lane or --cluster")
        scope = ctx.inventory.operable(cluster).nodes if cluster else list(ctx.inventory.nodes)
    except InputError as exc:
        for event in emit.refusal(outcome, str(exc)):
            yield event
        return
    survey = await survey_lanes(ctx, ctx.inventory.nodes)
    lanes = {lane} if lane else survey.lanes_on(scope)
    targets = survey.targets(lanes)
    yield emit.planned(
        ("lock", "stop"),
        f"stop {', '.join(sorted(lanes)) or 'nothing'} on "
        f"{', '.join(sorted(targets)) or 'no node'}",
    )
    locks = OpLocks(ctx, emit)
    async for event in locks.acquire(targets, outcome):
        yield event
    if not outcome.ok:
        yield emit.end(outcome)
        return
    try:
        async for event in stop_core(ctx, emit, survey, lanes, outcome):
            yield event
    finally:
        await asyncio.shield(locks.release())
    yield emit.end(outcome)
