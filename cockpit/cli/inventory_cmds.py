"""Commands that only read the inventory: `lanes`, `validate`, `render`."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from cockpit.cli.output import stdout_console
from cockpit.cli.usable import usable_inventory
from cockpit.config import check_inventory, resolve_inventory_dir
from cockpit.config.inventory import known_hosts_problem, ssh_file_problems
from cockpit.errors import EXIT_REFUSED
from cockpit.plan import RankCommand, plan_lane, redact_argv
from cockpit.plan.render import ENV_FILE
from cockpit.printable import printable

console = stdout_console()


def inventory_option(ctx: click.Context) -> Path | None:
    return (ctx.obj or {}).get("inventory")


def _short_image(ref: str) -> str:
    """`sparkring@c977a2d2`: the repository's last part and the digest's first 8 hex digits."""
    repository, _, digest = ref.partition("@")
    return f"{repository.rsplit('/', 1)[-1]}@{digest.removeprefix('sha256:')[:8]}"


def _span(nodes: list[str]) -> str:
    """`dgx1..dgx4` for a run of numbered nodes, else the list."""
    return f"{nodes[0]}..{nodes[-1]}" if len(nodes) > 2 else ",".join(nodes)


@click.command()
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.pass_context
def lanes(ctx: click.Context, fmt: str) -> None:
    """Every recipe with the clusters it runs on, its TP size, image and model."""
    inventory = usable_inventory(inventory_option(ctx))
    rows = [
        {
            "recipe": recipe.name,
            "cluster": cluster,
            "nodes": inventory.clusters[cluster].nodes,
            "node_span": _span(inventory.clusters[cluster].nodes),
            "tp": recipe.lane.tensor_parallel_size,
            "image": recipe.image.ref,
            "image_short": _short_image(recipe.image.ref),
            "model": f"{recipe.model.repo}@{recipe.model.revision}",
            "production": inventory.clusters[cluster].production,
        }
        for recipe in inventory.recipes.values()
        for cluster in inventory.clusters_of(recipe)
    ]
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    table = Table(
        title=f"lanes in {inventory.root}",
        title_justify="left",
        box=None,
        pad_edge=False,
        padding=(0, 1),
        header_style="bold",
    )
    wide = console.width >= 110  # the model column only where it fits without mangling the rest
    table.add_column("recipe", no_wrap=True)
    table.add_column("cluster", no_wrap=True)
    table.add_column("nodes", no_wrap=True)
    table.add_column("TP", justify="right", no_wrap=True, min_width=2)
    table.add_column("image", no_wrap=True)
    if wide:
        table.add_column("model", no_wrap=True)
    for row in rows:
        cluster = row["cluster"] + ("[yellow]*[/]" if row["production"] else "")
        cells = [
            escape(row["recipe"]),
            cluster,
            row["node_span"],
            str(row["tp"]),
            escape(row["image_short"]),
        ]
        table.add_row(*cells, *([escape(row["model"].split("/", 1)[-1])] if wide else []))
    console.print(table)
    if any(row["production"] for row in rows):
        console.print(
            "[yellow]*[/] production cluster: its lane must be down before another takes it"
        )


@click.command()
@click.pass_context
def validate(ctx: click.Context) -> None:
    """Check every file of the inventory; list every problem (exit code 2 if any)."""
    root = resolve_inventory_dir(inventory_option(ctx))
    inventory, problems = check_inventory(root)
    if inventory is not None and (known_hosts := known_hosts_problem(inventory)):
        problems.append(known_hosts)
    if inventory is not None:
        problems += ssh_file_problems(inventory)
    for problem in problems:
        click.echo(f"error: {problem}", err=True)
    if problems:
        click.echo(f"{len(problems)} problem(s) in {root}", err=True)
        ctx.exit(EXIT_REFUSED)
    assert inventory is not None
    click.echo(
        f"ok: {len(inventory.recipes)} recipes, {len(inventory.clusters)} clusters, "
        f"{len(inventory.nodes)} nodes in {root}"
    )


@click.command()
@click.option("--recipe", "recipe_name", required=True, help="Recipe (lane) name.")
@click.option("--cluster", "cluster_name", help="Cluster (default: the recipe's first).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@click.option("--reveal-secrets", is_flag=True, help="Show secret values instead of <redacted>.")
@click.pass_context
def render(
    ctx: click.Context, recipe_name: str, cluster_name: str | None, fmt: str, reveal_secrets: bool
) -> None:
    """Dry run: print the exact command that would start each rank, per node."""
    inventory = usable_inventory(inventory_option(ctx), cluster_name)
    recipe = inventory.recipe(recipe_name)
    cluster = inventory.cluster(cluster_name or recipe.lane.clusters[0])
    plan = plan_lane(inventory, recipe, cluster)

    def argv_of(rank: RankCommand) -> list[str]:
        return list(rank.argv if reveal_secrets else redact_argv(rank.argv))

    def env_of(rank: RankCommand) -> dict[str, str]:
        return dict(rank.env) if reveal_secrets else rank.display_env

    if fmt == "json":  # json.dumps escapes every control and non-ASCII character
        data = {
            "recipe": recipe.name,
            "cluster": cluster.name,
            "endpoint": plan.endpoint,
            "recipe_hash": plan.recipe_hash,
            "ranks": [
                {
                    "node": rank.node,
                    "host": inventory.nodes[rank.node].host,
                    "rank": rank.rank,
                    "container": rank.container,
                    "argv": argv_of(rank),
                    "env": env_of(rank),
                }
                for rank in plan.ranks
            ],
        }
        click.echo(json.dumps(data, indent=2))
        return
    click.echo(
        f"# {recipe.name} on {cluster.name}: TP{recipe.lane.tensor_parallel_size}, "
        f"endpoint {plan.endpoint}, recipe {plan.recipe_hash}"
    )
    click.echo("# launch order: workers first, head (rank 0) last")
    click.echo(
        f"# env: passed as {ENV_FILE}, a file of mode 0600 written on the node through ssh's "
        "stdin and removed once the container started"
    )
    for rank in plan.ranks:
        role = "head" if rank.is_head else "worker"
        click.echo(
            f"\n# rank {rank.rank} ({role}) on {rank.node} ({inventory.nodes[rank.node].host})"
        )
        for key, value in env_of(rank).items():
            click.echo(f"#   {key}={printable(value)}")
        click.echo(rank.display(reveal_secrets))


COMMANDS = [lanes, validate, render]
