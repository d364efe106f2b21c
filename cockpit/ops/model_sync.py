"""`sync-model`: the recipe's pinned model snapshot copied from a node that holds it to the nodes
of the cluster that lack it (or hold a copy that fails the pins), then the pins read again.

The bytes go node to node along the image sync's relay chains (`sync_plan.relay_command`, the
source's uplink carrying `sync_width` streams, never the cockpit host): one `tar -cf -` on the
source, and on every hop the safe extract of `model_sync_plan` (temp folder, end marker, rename)
while the stream goes on to the next. The blobs every destination already holds whole (a cut
copy keeps the ones that arrived whole) are left out of the stream, so a re-run after a cut
sends only the rest; a node whose copy failed is retried once on its own. Nothing is written
before the plan is shown: the cache markers that tell shared caches apart are written after the
locks, and the plan is narrowed when a marker reveals a cache the source already fills.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import replace

from cockpit.config.models import Cluster, Recipe
from cockpit.errors import InputError
from cockpit.events import OpEvent
from cockpit.ops.context import Emit, OpContext, OpLocks, Outcome
from cockpit.ops.facts import FactsCollector, NodeFacts
from cockpit.ops.model_sync_plan import (
    CacheIdentity,
    ModelSyncPlan,
    held_command,
    identity_command,
    manifest_blobs,
    manifest_command,
    mark_command,
    model_dir,
    model_relay_command,
    parse_held,
    parse_identity,
    plan_model_sync,
    tar_size,
)
from cockpit.ops.preflight import snapshot_problems
from cockpit.ops.sync import relay
from cockpit.ssh import SshError

STEP = "copy"
VERIFY = "verify"
SMALL_TIMEOUT_S = 20.0
HELD_TIMEOUT_S = 3600.0  # hashing the blobs a destination holds reads them whole


def no_source_fix(recipe: Recipe, cluster: str) -> str:
    """What to do when no node can be the source."""
    model = recipe.model
    return (
        f"download it on one node (huggingface-cli download {model.repo} --revision "
        f"{model.revision}, into that node's model cache), then "
        f"cockpit sync-model --recipe {recipe.name} --cluster {cluster}"
    )


async def _identity(ctx: OpContext, node: str, command: str) -> CacheIdentity:
    try:
        result = await ctx.pool.run(node, command, timeout=SMALL_TIMEOUT_S)
    except SshError:
        return CacheIdentity()
    return parse_identity(result.stdout) if result.ok else CacheIdentity()


async def read_identities(ctx: OpContext, caches: Mapping[str, str]) -> dict[str, CacheIdentity]:
    """Each node's cache identity, read only (the marker if one is there, else device:inode)."""
    names = list(caches)
    found = await asyncio.gather(*(_identity(ctx, n, identity_command(caches[n])) for n in names))
    return dict(zip(names, found, strict=True))


async def mark_identities(
    ctx: OpContext, caches: Mapping[str, str], nodes: Iterable[str]
) -> dict[str, CacheIdentity]:
    """Write a marker where there is none, one node after the other (so the second node of a
    shared cache finds the first's marker), and read back the one kept."""
    return {
        node: await _identity(ctx, node, mark_command(caches[node], secrets.token_hex(16)))
        for node in nodes
    }


async def _manifest(ctx: OpContext, source: str, folder: str, revision: str) -> str | None:
    """The source's listing of the snapshot and its blobs (None when it could not be read)."""
    try:
        result = await ctx.pool.run(source, manifest_command(folder, revision), timeout=60)
    except SshError:
        return None
    return result.stdout if result.ok else None


async def _held(ctx: OpContext, node: str, folder: str, blobs: Mapping[str, int]) -> frozenset[str]:
    """The blobs `node` already holds whole (a cut copy's salvage, a previous revision's)."""
    try:
        result = await ctx.pool.run(node, held_command(folder, blobs), timeout=HELD_TIMEOUT_S)
    except SshError:
        return frozenset()
    return parse_held(result.stdout, blobs) if result.ok else frozenset()


def _caches(ctx: OpContext, cluster: Cluster, source: str | None) -> dict[str, str]:
    caches = ctx.inventory.model_caches(cluster)
    if source is not None and source not in caches:
        caches[source] = ctx.inventory.model_cache_of(cluster, source)
    return caches


async def survey(
    ctx: OpContext, recipe: Recipe, cluster: Cluster, source: str | None
) -> tuple[ModelSyncPlan, dict[str, NodeFacts], dict[str, str]]:
    """Facts and cache identities of the cluster (and of `source`), read only, and the plan."""
    caches = _caches(ctx, cluster, source)
    folders = {node: model_dir(recipe.model, cache) for node, cache in caches.items()}
    collector = FactsCollector(ctx.pool, recipe, ctx.inventory.model_cache, node_caches=caches)
    facts, identities = await asyncio.gather(
        collector.collect(caches), read_identities(ctx, caches)
    )
    plan = plan_model_sync(
        recipe.model, cluster.nodes, facts, identities, source=source,
        fix=no_source_fix(recipe, cluster.name), width=ctx.sync_width,
    )  # fmt: skip
    if plan.copy:
        manifest = await _manifest(ctx, plan.source, folders[plan.source], recipe.model.revision)
        plan = replace(plan, total_bytes=tar_size(manifest) if manifest is not None else None)
    return plan, facts, folders


async def _copy(
    ctx: OpContext,
    emit: Emit,
    plan: ModelSyncPlan,
    folders: Mapping[str, str],
    rev: str,
    manifest: str | None,
) -> AsyncIterator[OpEvent | dict[str, str]]:
    """One relay along `plan.chains`, leaving out the blobs every destination already holds
    whole; progress events (bytes sent to each node), then {node: problem} of the failures."""
    blobs = manifest_blobs(manifest or "")
    held = await asyncio.gather(*(_held(ctx, n, folders[n], blobs) for n in plan.copy))
    skip = frozenset(blobs).intersection(*held) if held else frozenset()
    if skip:
        yield emit.info(f"{len(skip)} blob(s) already on every destination: not sent again")
    total = tar_size(manifest, skip) if manifest is not None else None
    command = model_relay_command(plan, folders, rev, skip)
    async for item in relay(
        ctx, emit, plan.source, command, plan.chains, total, step=STEP, sink="the extract"
    ):
        yield item


async def _verify(
    collector: FactsCollector, recipe: Recipe, nodes: Iterable[str]
) -> dict[str, list[str]]:
    """Each node's pin problems, read again (empty: the snapshot matches)."""
    facts = await collector.collect(nodes)
    return {
        node: [f"unreachable: {f.unreachable}"]
        if not f.reachable
        else snapshot_problems(recipe.model, f)
        for node, f in facts.items()
    }


async def sync_model(
    ctx: OpContext,
    recipe: Recipe,
    cluster_name: str,
    source: str | None = None,
    dry_run: bool = False,
) -> AsyncIterator[OpEvent]:
    """The `sync-model` operation (locks the source and the destinations)."""
    emit = Emit("sync-model", recipe.name, cluster_name)
    outcome = Outcome()
    try:
        cluster = ctx.inventory.operable(cluster_name)
        if source is not None and source not in ctx.inventory.nodes:
            raise InputError(f"unknown source node {source!r}")
        plan, facts, folders = await survey(ctx, recipe, cluster, source)
    except InputError as exc:
        for event in emit.refusal(outcome, str(exc)):
            yield event
        return
    yield emit.planned(("lock", STEP, VERIFY) if plan.copy else (), plan.describe())
    for node in plan.unreachable:
        yield emit.notice(f"{node} is unreachable: {facts[node].unreachable}", node, error=True)
    for node, other in plan.shared:
        yield emit.info(f"shared cache with {other}: skipped", node)
    if dry_run or not plan.copy:
        _settle(outcome, plan, "dry run: nothing copied" if dry_run else "nothing to copy")
        yield emit.end(outcome)
        return
    locks = OpLocks(ctx, emit)
    async for event in locks.acquire([plan.source, *plan.copy], outcome):
        yield event
    if not outcome.ok:
        yield emit.end(outcome)
        return
    try:
        core = sync_model_core(ctx, emit, recipe, cluster, plan, facts, folders, outcome)
        async for event in core:
            yield event
    finally:
        await asyncio.shield(locks.release())
    yield emit.end(outcome)


async def sync_model_core(
    ctx: OpContext,
    emit: Emit,
    recipe: Recipe,
    cluster: Cluster,
    plan: ModelSyncPlan,
    facts: Mapping[str, NodeFacts],
    folders: Mapping[str, str],
    outcome: Outcome,
) -> AsyncIterator[OpEvent]:
    """Mark the caches, narrow the plan to what the marks reveal, copy, verify; sets `outcome`.
    The caller holds the locks of the source and the destinations."""
    started = time.monotonic()
    caches = _caches(ctx, cluster, plan.source)
    identities = await read_identities(ctx, caches)
    identities |= await mark_identities(ctx, caches, [plan.source, *plan.copy])
    narrowed = plan_model_sync(
        recipe.model, cluster.nodes, facts, identities, source=plan.source, width=ctx.sync_width
    )
    for node, other in narrowed.shared:
        if node in plan.copy:
            yield emit.info(f"shared cache with {other}: skipped", node)
    plan = narrowed
    manifest = await _manifest(ctx, plan.source, folders[plan.source], recipe.model.revision)
    failed: dict[str, str] = {}
    todo = plan
    for attempt in (1, 2):
        problems: dict[str, str] = {}
        async for item in _copy(ctx, emit, todo, folders, recipe.model.revision, manifest):
            if isinstance(item, dict):
                problems = item
            else:
                yield item
        for node in todo.copy:
            if node not in problems:
                yield emit.finished(STEP, node, detail=f"from {plan.source}")
        retry = list(problems) if attempt == 1 else []
        for node, problem in problems.items():
            again = " — retrying once, without the blobs it kept" if retry else ""
            yield emit.finished(STEP, node, ok=False, detail=problem)
            yield emit.notice(f"{node}: {problem}{again}", node, error=not retry)
        if not retry:
            failed = problems
            break
        todo = replace(plan, copy=tuple(retry), chains=tuple((n,) for n in retry))
    collector = FactsCollector(ctx.pool, recipe, ctx.inventory.model_cache, node_caches=caches)
    checked = [n for n in plan.verify if n not in failed]
    for node in checked:
        yield emit.started(VERIFY, node)
    for node, problems in (await _verify(collector, recipe, checked)).items():
        if problems:
            failed[node] = "; ".join(problems)
        detail = "; ".join(problems) if problems else "pins match"
        yield emit.finished(VERIFY, node, ok=not problems, detail=detail)
    seconds = time.monotonic() - started
    copied = [n for n in plan.copy if n not in failed]
    if failed:
        why = "; ".join(f"{n}: {p}" for n, p in sorted(failed.items()))
        outcome.fail(f"copied {len(copied)}/{len(plan.copy)} in {seconds:.1f} s; failed: {why}")
    else:
        _settle(outcome, plan, f"copied {plan.label} to {len(copied)} node(s) from "
                f"{plan.source} in {seconds:.1f} s, pins verified")  # fmt: skip


def _settle(outcome: Outcome, plan: ModelSyncPlan, summary: str) -> None:
    """Done with `summary`, failed when some nodes could not be asked."""
    if plan.unreachable:
        outcome.fail(f"{summary}; unreachable: {', '.join(plan.unreachable)}")
    else:
        outcome.done(summary)
