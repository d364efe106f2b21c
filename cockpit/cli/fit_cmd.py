"""`fit`: will a lane fit in memory, per rank, before anyone launches it?

It reads the snapshot's config.json and weights index on the cluster's head node over SSH (the
files live on the nodes, not here) and prints the split of one rank's memory and the verdict.
Exit codes: 0 it fits, 2 it does not (vLLM would refuse to start: the same refusal as a launch's
preflight), 1 the node did not tell (unreachable, or a snapshot that does not say enough).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import click

from cockpit.cli.usable import usable_inventory
from cockpit.config import Inventory
from cockpit.errors import EXIT_FAILED, EXIT_REFUSED
from cockpit.plan import LanePlan, plan_lane
from cockpit.plan.memory_fit import FitUnknown, MemoryFit
from cockpit.redact import shown


def _inventory(ctx: click.Context) -> Path | None:
    return (ctx.obj or {}).get("inventory")


async def _read(inventory: Inventory, plan: LanePlan) -> MemoryFit | FitUnknown:
    from cockpit.ops.facts import FactsCollector  # asyncssh: only once the command runs
    from cockpit.ops.preflight import lane_fit
    from cockpit.ssh.inventory import pool_for

    head = plan.ranks[0].node
    async with pool_for(inventory) as pool:
        collector = FactsCollector.of(pool, inventory, plan.recipe, plan.cluster)
        return lane_fit(plan, {head: await collector.model_files(head)})


def _table(fit: MemoryFit) -> list[str]:
    rows = [
        ("memory", f"{fit.memory_gib:g} GiB × {fit.gpu_memory_utilization:g} = "
                   f"{fit.budget_gib:.1f} GiB"),
        ("weights", f"{fit.weights_gib:.1f} GiB (the snapshot's {fit.weights_gib * fit.tp:.1f} "
                    f"GiB over TP{fit.tp})"),
        ("runtime", f"{fit.runtime_gib:.1f} GiB (activations, CUDA graphs, NCCL, CUDA context: "
                    "estimated)"),
        ("KV pool", f"{max(fit.pool_gib, 0):.1f} GiB ≈ {fit.pool_tokens:,} tokens at "
                    f"{fit.token_bytes:,} bytes a token"),
        ("sliding window", f"{fit.window_bytes / 2**30:.2f} GiB a sequence at most"
         if fit.window_bytes else "none"),
        ("one request", f"{fit.request_gib:.1f} GiB at max-model-len {fit.max_model_len:,}"),
        ("at once", f"{fit.at_once} of {fit.max_num_seqs} (max-num-seqs) at max-model-len"),
    ]  # fmt: skip
    return [f"  {name:<15} {value}" for name, value in rows]


def _json(fit: MemoryFit | FitUnknown, plan: LanePlan) -> dict[str, object]:
    data: dict[str, object] = {
        "recipe": plan.recipe.name,
        "cluster": plan.cluster.name,
        "node": plan.ranks[0].node,
        "line": fit.line(),
    }
    if isinstance(fit, FitUnknown):
        return {**data, "fits": None, "unknown": fit.reason}
    problem = fit.problem()
    return {
        **data,
        "fits": fit.fits,
        "tp": fit.tp,
        "memory_gib": fit.memory_gib,
        "gpu_memory_utilization": fit.gpu_memory_utilization,
        "weights_gib": round(fit.weights_gib, 3),
        "runtime_gib": fit.runtime_gib,
        "kv_pool_gib": round(fit.pool_gib, 3),
        "kv_pool_tokens": fit.pool_tokens,
        "kv_bytes_per_token": fit.token_bytes,
        "sliding_window_bytes_per_sequence": fit.window_bytes,
        "request_gib": round(fit.request_gib, 3),
        "max_model_len": fit.max_model_len,
        "max_num_seqs": fit.max_num_seqs,
        "at_once": fit.at_once,
        "headroom_gib": round(fit.headroom_gib, 3) if fit.fits else None,
        "problem": dict(zip(("field", "message", "fix"), problem, strict=True))
        if problem
        else None,
    }


@click.command("fit")
@click.option("--recipe", "-r", "recipe_name", required=True, help="Recipe (lane) name.")
@click.option("--cluster", "-c", "cluster_name", help="Cluster (default: the recipe's first).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@click.pass_context
def fit(ctx: click.Context, recipe_name: str, cluster_name: str | None, fmt: str) -> None:
    """Memory per rank: weights, runtime and KV pool, and whether the lane fits (no launch)."""
    inventory = usable_inventory(_inventory(ctx), cluster_name)
    recipe = inventory.recipe(recipe_name)
    plan = plan_lane(inventory, recipe, inventory.cluster(cluster_name or recipe.lane.clusters[0]))
    result = asyncio.run(_read(inventory, plan))
    if fmt == "json":
        click.echo(json.dumps(_json(result, plan), indent=2))
    else:
        head = plan.ranks[0].node
        click.echo(
            f"{recipe.name} on {plan.cluster.name}: TP{recipe.lane.tensor_parallel_size}, "
            f"snapshot read on {head}"
        )
        if isinstance(result, MemoryFit):
            click.echo("\n".join(_table(result)))
        click.echo(shown(result.line()))
    problem = result.problem()
    if problem is not None:
        field, message, fix = problem
        source = inventory.sources.get(recipe.name, Path(f"{recipe.name}.toml"))
        click.echo(shown(f"refused: {source}: {field}: {message} — fix: {fix}"), err=True)
        ctx.exit(EXIT_REFUSED)
    if isinstance(result, FitUnknown):
        ctx.exit(EXIT_FAILED)


COMMANDS = [fit]
