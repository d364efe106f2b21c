"""`sync-image`: the lane's image copied node to node, its digest re-attached, its id verified.

One `docker save` on the source feeds relay chains (see `sync_plan`); every peer then runs
`docker pull repo@sha256:…` (the registry only confirms the manifest: the layers are local) to
get back the RepoDigest that save/load drops (seed §1), and its image id is checked against the
source's. A peer that failed is retried once from the source; the others complete regardless.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping, Sequence

from cockpit.config.models import Recipe
from cockpit.errors import InputError
from cockpit.events import OpEvent
from cockpit.ops.context import Emit, OpContext, OpLocks, Outcome
from cockpit.ops.facts import FactsCollector, NodeFacts
from cockpit.ops.sync_plan import (
    SyncPlan,
    image_relay_command,
    parse_hop_line,
    plan_sync,
    transfer_eta,
)
from cockpit.ssh import SshError
from cockpit.telemetry.docker_out import parse_image_inspect

PULL_TIMEOUT_S = 120.0
STEP = "transfer"


async def survey(
    ctx: OpContext,
    recipe: Recipe,
    nodes: Sequence[str],
    source: str | None,
    known: Mapping[str, NodeFacts] | None = None,
) -> tuple[SyncPlan, dict[str, NodeFacts]]:
    """Facts of the target nodes (and of the rest of the fleet when none holds the image);
    nodes in `known` (facts the caller just gathered) are not asked again."""
    collector = FactsCollector(ctx.pool, recipe, ctx.inventory.model_cache)
    wanted = [*nodes, *([source] if source and source not in nodes else [])]
    facts = dict(known or {})
    facts |= await collector.collect(n for n in wanted if n not in facts)
    if source is None and not any(f.holds_pinned for f in facts.values()):
        others = [n for n in ctx.inventory.nodes if n not in facts]
        facts |= await collector.collect(others)
    return plan_sync(recipe.image.ref, nodes, facts, source=source, width=ctx.sync_width), facts


async def relay(
    ctx: OpContext,
    emit: Emit,
    source: str,
    command: str,
    chains: Sequence[Sequence[str]],
    total: int | None,
    *,
    step: str = STEP,
    sink: str = "docker load",
) -> AsyncIterator[OpEvent | dict[str, str]]:
    """Run a relay `command` (see `sync_plan.relay_command`) on `source`; yields `step`'s
    progress events, then {peer: error} of the peers whose `sink` did not finish cleanly."""
    peers = [p for chain in chains for p in chain]
    for peer in peers:
        yield emit.started(step, peer)
    started = time.monotonic()
    loaded: dict[str, int] = {}
    errors: dict[str, str] = {}
    stream = ctx.pool.stream(source, command)
    try:
        async for line in stream:
            hop = parse_hop_line(line)
            if hop is None or hop.node not in peers:
                continue
            if hop.kind == "bytes":
                elapsed = hop.seconds or (time.monotonic() - started)
                rate = hop.bytes / elapsed if elapsed > 0 else None
                eta = transfer_eta(hop.bytes, total, elapsed)
                yield emit.progress(
                    step, hop.node, done=float(hop.bytes), total=float(total) if total else None,
                    unit="B", rate=rate, eta_s=eta,
                )  # fmt: skip
            elif hop.kind == "loaded":
                loaded[hop.node] = hop.status
                if hop.status == 0 and total:  # the stream's size is only known at its end
                    yield emit.progress(step, hop.node, done=float(total), total=float(total),
                                        unit="B")  # fmt: skip
            elif hop.kind == "error":
                errors.setdefault(hop.node, hop.text)
    except SshError as exc:
        for peer in peers:
            errors.setdefault(peer, f"relay from {source} broken: {exc.reason}")
    finally:
        await stream.aclose()
    failed = {}
    for peer in peers:
        if loaded.get(peer) == 0:
            continue
        failed[peer] = errors.get(peer) or (
            f"{sink} exited {loaded[peer]}" if peer in loaded else "stream cut before the end"
        )
    yield failed


async def _reattach(ctx: OpContext, plan: SyncPlan, peer: str) -> str | None:
    """Pull by digest (re-attaches RepoDigests) and verify the image id; None when good."""
    try:
        pulled = await ctx.pool.run(peer, ["docker", "pull", plan.ref], timeout=PULL_TIMEOUT_S)
        if not pulled.ok:
            return (pulled.stderr.strip().splitlines() or ["docker pull failed"])[-1]
        shown = await ctx.pool.run(peer, ["docker", "image", "inspect", "--", plan.ref])
    except SshError as exc:
        return exc.reason
    images = parse_image_inspect(shown.stdout)
    if not images:
        return f"{plan.ref} does not resolve after the pull"
    if images[0].id != plan.image_id:
        return f"image id {images[0].id[:19]} differs from the source's {plan.image_id[:19]}"
    return None


async def _attempt(
    ctx: OpContext,
    emit: Emit,
    plan: SyncPlan,
    chains: Sequence[Sequence[str]],
    reattach: Sequence[str],
    size: int | None,
) -> AsyncIterator[OpEvent | dict[str, str]]:
    """One round: transfer along `chains`, then re-attach and verify every peer that loaded (and
    the `reattach` peers); yields events, then {peer: problem} of this round's failures."""
    problems: dict[str, str] = {}
    if chains:
        command = image_relay_command(plan.ref, chains)
        async for item in relay(ctx, emit, plan.source, command, chains, size):
            if isinstance(item, dict):
                problems = item
            else:
                yield item
    candidates = [p for chain in chains for p in chain if p not in problems] + list(reattach)
    results = await asyncio.gather(*(_reattach(ctx, plan, p) for p in candidates))
    for peer, problem in zip(candidates, results, strict=True):
        if problem is None:
            yield emit.finished(STEP, peer, detail="image id verified, digest attached")
        else:
            problems[peer] = problem
    yield problems


async def _remove_wrong(ctx: OpContext, node: str, image_id: str) -> str | None:
    """`docker rmi` the image a digest wrongly names on `node`; None when it is gone."""
    try:
        result = await ctx.pool.run(node, ["docker", "rmi", "-f", "--", image_id], timeout=60)
    except SshError as exc:
        return exc.reason
    if result.ok or "No such image" in result.stderr:
        return None
    return (result.stderr.strip().splitlines() or ["docker rmi failed"])[-1]


async def sync_core(
    ctx: OpContext, emit: Emit, plan: SyncPlan, outcome: Outcome, size: int | None
) -> AsyncIterator[OpEvent]:
    """Remove wrong images, transfer, re-attach, verify; a peer whose transfer failed is retried
    once on its own chain (one broken peer cannot cut another); sets `outcome`."""
    started = time.monotonic()
    failed: dict[str, str] = {}
    for node, wrong in plan.remove:
        yield emit.started("remove", node)
        problem = await _remove_wrong(ctx, node, wrong)
        detail = problem or f"removed {wrong[:19]}, which the digest named"
        yield emit.finished("remove", node, ok=problem is None, detail=detail)
        if problem is not None:
            failed[node] = f"could not remove the wrong image {wrong[:19]}: {problem}"
            yield emit.notice(f"{node}: {failed[node]}", node, error=True)
    chains: Sequence[Sequence[str]] = [
        kept for chain in plan.chains if (kept := [p for p in chain if p not in failed])
    ]
    reattach: Sequence[str] = [p for p in plan.reattach if p not in failed]
    for attempt in (1, 2):
        problems: dict[str, str] = {}
        async for item in _attempt(ctx, emit, plan, chains, reattach, size):
            if isinstance(item, dict):
                problems = item
            else:
                yield item
        retry = [p for p in problems if attempt == 1 and p in plan.transfer]
        for peer, problem in problems.items():
            yield emit.finished(STEP, peer, ok=False, detail=problem)
            again = " — retrying once" if peer in retry else ""
            yield emit.notice(f"{peer}: {problem}{again}", peer, error=not again)
        failed |= {p: why for p, why in problems.items() if p not in retry}
        if not retry:
            break
        chains, reattach = [[p] for p in retry], []
    seconds = time.monotonic() - started
    done = [p for p in plan.peers if p not in failed]
    if failed:
        outcome.fail(
            f"synced {len(done)}/{len(plan.peers)} peers in {seconds:.1f} s; "
            f"failed: {', '.join(sorted(failed))}"
        )
    else:
        outcome.done(
            f"synced {len(done)} peer(s) from {plan.source} in {seconds:.1f} s"
            if done
            else "every node already holds the image by digest"
        )


async def sync_image(
    ctx: OpContext, recipe: Recipe, cluster_name: str, source: str | None = None
) -> AsyncIterator[OpEvent]:
    """The `sync-image` operation (locks the source and the peers)."""
    emit = Emit("sync", recipe.name, cluster_name)
    outcome = Outcome()
    try:
        cluster = ctx.inventory.operable(cluster_name)
        if source is not None and source not in ctx.inventory.nodes:
            raise InputError(f"unknown source node {source!r}")
        plan, facts = await survey(ctx, recipe, cluster.nodes, source)
    except InputError as exc:
        for event in emit.refusal(outcome, str(exc)):
            yield event
        return
    unreachable = [n for n in cluster.nodes if not facts[n].reachable]
    steps = ("lock", *(("remove",) if plan.remove else ()), STEP)
    yield emit.planned(steps, plan.describe())
    for node in unreachable:
        yield emit.notice(f"{node} is unreachable: {facts[node].unreachable}", node, error=True)
    locks = OpLocks(ctx, emit)
    async for event in locks.acquire([plan.source, *plan.peers], outcome):
        yield event
    if not outcome.ok:
        yield emit.end(outcome)
        return
    try:
        async for event in sync_core(ctx, emit, plan, outcome, facts[plan.source].image_size):
            yield event
    finally:
        await asyncio.shield(locks.release())
    if unreachable and outcome.ok:
        outcome.fail(f"{outcome.summary}; unreachable: {', '.join(unreachable)}")
    yield emit.end(outcome)
