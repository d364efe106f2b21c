"""`cockpit logs`: a lane's container logs over SSH, each line tagged with its node and rank.

The head's by default, one rank's with `--rank`, every rank's with `--all` (in the order of the
nodes' clocks: `cockpit.ops.logs`); stdout and stderr of the engine merged, as `docker logs`
keeps them apart. Exit codes: 0 read to the end (or the lane stopped while followed), 1 a node
failed (unreachable, a read lost, docker's own error), 2 bad input (a lane or rank that is not
there); 128 + N when signal N ended a follow (Ctrl-C: 130).
"""

from __future__ import annotations

import os
import sys
from contextlib import aclosing

import click

from cockpit.cli.bounds import INDEX
from cockpit.cli.usable import usable_inventory
from cockpit.config import Inventory
from cockpit.errors import EXIT_FAILED, EXIT_OK, InputError
from cockpit.ops.interrupt import Interrupted, run_interruptible
from cockpit.redact import shown


def _nodes(inventory: Inventory, lane: str, cluster: str | None) -> list[str]:
    """Where the lane may have containers: the cluster's nodes, else its clusters' nodes."""
    recipe = inventory.recipe(lane)
    clusters = inventory.clusters_of(recipe)
    if cluster is not None:
        inventory.cluster(cluster)  # an unknown name is refused with the known ones
        if cluster not in clusters:
            known = ", ".join(clusters)
            raise InputError(f"{lane} does not run on {cluster} (its clusters: {known})")
        clusters = [cluster]
    return list(dict.fromkeys(n for c in clusters for n in inventory.cluster(c).nodes))


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


async def _logs(
    inventory: Inventory,
    lane: str,
    *,
    cluster: str | None,
    rank: int | None,
    every: bool,
    follow: bool,
    since: str | None,
    timestamps: bool,
) -> int:
    from cockpit.ops.context import OpContext  # here: `cockpit --help` loads no SSH
    from cockpit.ops.logs import Failed, pick, read
    from cockpit.ops.stop import survey_lanes
    from cockpit.ssh.inventory import pool_for

    nodes = _nodes(inventory, lane, cluster)
    async with pool_for(inventory, nodes) as pool:
        survey = await survey_lanes(OpContext(inventory, pool), nodes)
        picked = pick(
            lane, survey.containers, survey.unreachable, cluster=cluster, rank=rank, every=every
        )
        code = EXIT_OK
        for node, why in sorted(picked.unreachable.items()):
            _say(f"error: {node} unreachable ({shown(why)}): its rank's log is missing")
            code = EXIT_FAILED
        if follow:
            for ended in (r for r in picked.ranks if not r.running):
                _say(f"note: {ended.tag}'s container has exited: its log ends there")
        out = sys.stdout
        # closed however the printing ends (a closed pipe too): the reads on the nodes stop
        async with aclosing(read(pool, picked.ranks, follow=follow, since=since)) as items:
            async for item in items:
                if isinstance(item, Failed):
                    _say(f"error: {item.rank.tag}: {shown(item.why)}")
                    code = EXIT_FAILED
                    continue
                stamp = f"{item.ts} " if timestamps else ""
                out.write(f"{item.rank.tag} | {stamp}{shown(item.text)}\n")
                if follow:
                    out.flush()
        out.flush()
        return code


@click.command("logs")
@click.option("--lane", "-l", required=True, help="Lane (recipe name) whose logs to print.")
@click.option("--rank", type=INDEX, default=None, help="This rank only (default: the head, 0).")
@click.option("--all", "-a", "every", is_flag=True, help="Every rank, interleaved by time.")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new lines (Ctrl-C ends).")
@click.option(
    "--since",
    metavar="DURATION",
    default=None,
    help="Only lines newer than this (10m, 1h30m, 45s; or a time, 2026-10-02T19:06:00Z).",
)
@click.option("--cluster", "-c", default=None, help="The lane's cluster (when on several).")
@click.option("--timestamps", "-t", is_flag=True, help="Each line with the node's time of it.")
@click.pass_context
def logs_cmd(
    ctx: click.Context,
    lane: str,
    rank: int | None,
    every: bool,
    follow: bool,
    since: str | None,
    cluster: str | None,
    timestamps: bool,
) -> None:
    """Print a lane's container logs (stdout and stderr), each line as `node/rRANK | line`."""
    from cockpit.ops.logs import check_since

    if rank is not None and every:
        raise InputError("--rank and --all exclude each other: one rank, or every rank")
    since = None if since is None else check_since(since)
    inventory = usable_inventory((ctx.obj or {}).get("inventory"), cluster)
    main = _logs(inventory, lane, cluster=cluster, rank=rank, every=every, follow=follow,
                 since=since, timestamps=timestamps)  # fmt: skip
    try:
        code = run_interruptible(main)
    except Interrupted as exc:  # how a follow ends: the reads on the nodes are stopped, quietly
        sys.exit(exc.exit_code)
    except BrokenPipeError:  # `cockpit logs … | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit
        code = EXIT_OK
    sys.exit(code)


COMMANDS = [logs_cmd]
