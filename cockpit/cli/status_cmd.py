"""`cockpit status`: the fleet's nodes, GPUs, memory, containers and recipe images, over SSH."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from functools import partial

import click
from rich.console import Console
from rich.live import Live

from cockpit.config import Inventory, load_inventory
from cockpit.errors import EXIT_FAILED, EXIT_OK, EXIT_REFUSED
from cockpit.ops.ownership import holder_check
from cockpit.pids import pid_exists
from cockpit.ssh.inventory import pool_for
from cockpit.status import (
    FleetPoller,
    FleetStatus,
    Health,
    Pace,
    WantedImage,
    fleet_status,
    status_json,
    status_renderable,
    wanted_images,
)
from cockpit.status.orphans import OrphanWatch

FIRST_ROUND_IDLE_S = 15.0
"""The one-shot status waits while facts keep arriving; it gives up on what is still unknown once
no node sent a new kind of fact for the connect timeout plus this (slow docker queries on a busy
node), or at FIRST_ROUND_CAP_S in all."""
FIRST_ROUND_CAP_S = 120.0
CONFIRM_S = 15.0
"""How long the one-shot status waits for the round that confirms an orphan (asked at once: a
round or two); one not confirmed by then is not shown."""
WATCH_REFRESH_S = 1.0
console = Console(highlight=False)


def _nodes(inventory: Inventory, cluster: str | None) -> list[str]:
    return list(inventory.cluster(cluster).nodes if cluster is not None else inventory.nodes)


async def _collect(
    inventory: Inventory, nodes: list[str], wanted: list[WantedImage], watch: bool, fmt: str
) -> FleetStatus:
    pace = Pace()
    watcher = OrphanWatch()
    async with pool_for(inventory, nodes) as pool, FleetPoller(pool, nodes, pace) as poller:

        def snapshot() -> FleetStatus:
            now = time.time()
            gone = holder_check(socket.gethostname(), pid_exists)
            facts = poller.facts()
            orphans = {
                node: watcher.orphans(node, facts[node], gone, partial(poller.refresh, node))
                for node in facts
            }
            return fleet_status(
                poller.links(), facts, wanted, now, pace.stale_after_s, orphans, gone
            )

        if not watch:
            idle = inventory.ssh.connect_timeout + FIRST_ROUND_IDLE_S
            await poller.wait_first_round(idle, FIRST_ROUND_CAP_S)
            result = snapshot()
            deadline = time.monotonic() + CONFIRM_S
            while watcher.pending and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
                result = snapshot()
            return result
        if fmt == "json":
            while True:
                click.echo(json.dumps(status_json(snapshot())))
                await asyncio.sleep(WATCH_REFRESH_S)
        with Live(status_renderable(snapshot()), console=console, auto_refresh=False) as live:
            while True:
                await asyncio.sleep(WATCH_REFRESH_S)
                live.update(status_renderable(snapshot()), refresh=True)


def _say_broken(inventory: Inventory) -> None:
    for breakage in inventory.broken:
        click.echo(f"error: {breakage}", err=True)


@click.command()
@click.option("--cluster", "-c", help="Only the nodes of this cluster.")
@click.option("--watch", "-w", is_flag=True, help="Refresh live until Ctrl-C.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.pass_context
def status(ctx: click.Context, cluster: str | None, watch: bool, fmt: str) -> None:
    """Nodes: reachable, GPU, memory (unified-aware), containers by lane, recipe images.

    Exits 1 (one-shot mode) when a node is not healthy, a fact is still unknown, or a problem
    (an orphaned lane, an image that is not the pinned one) is shown with its fix; else 2 when a
    cluster of the inventory is broken (the others' nodes are reported all the same).
    """
    inventory = load_inventory((ctx.obj or {}).get("inventory"), partial=True)
    nodes = _nodes(inventory, cluster)
    recipes = [r for r in inventory.recipes.values() if not cluster or cluster in r.lane.clusters]
    usable = inventory.clusters  # a broken cluster is left out: its recipes' other clusters stay
    placements = {
        r.name: tuple((c, tuple(usable[c].nodes)) for c in r.lane.clusters if c in usable)
        for r in recipes
    }
    wanted = wanted_images(recipes, placements)
    if watch:  # before the live view takes the screen
        _say_broken(inventory)
    try:
        result = asyncio.run(_collect(inventory, nodes, wanted, watch, fmt))
    except KeyboardInterrupt:
        return
    if fmt == "json":
        broken = [str(b) for b in inventory.broken]
        click.echo(json.dumps({**status_json(result), "broken": broken}, indent=2))
    else:
        console.print(status_renderable(result))
    _say_broken(inventory)
    healthy = all(row.health is Health.OK for row in result.rows)
    healthy = healthy and result.complete and not result.problems
    ctx.exit(EXIT_FAILED if not healthy else EXIT_REFUSED if inventory.broken else EXIT_OK)


COMMANDS = [status]
