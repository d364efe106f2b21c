"""`cockpit sim ...` (a simulated fleet in the background) and `cockpit demo` (one for this run)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.table import Table

from cockpit.cli.bounds import Bounded
from cockpit.cli.guided import GuidedGroup
from cockpit.tui.operations import LaneTarget
from cockpit_sim.fleet import SimFleet, default_dir
from cockpit_sim.fleet.layout import MAX_NODES
from cockpit_sim.fleet.realdocker import RealDockerError
from cockpit_sim.tools.nodestate import NodeState

if TYPE_CHECKING:
    from cockpit.tui.demo import Demo

console = Console(highlight=False, soft_wrap=True)

dir_option = click.option(
    "--dir",
    "root",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Fleet folder (default: the user runtime dir + /sim).",
)


def _root(root: Path | None) -> Path:
    return (root or default_dir()).expanduser().resolve()


def _fleet_options(func: click.decorators.FC) -> click.decorators.FC:
    for option in reversed(
        [
            click.option(
                "--nodes", type=click.IntRange(1, MAX_NODES), default=8, show_default=True
            ),
            click.option(
                "--speed",
                type=Bounded(float, 0.01),
                default=1.0,
                show_default=True,
                help="Simulated time runs this many times faster.",
            ),
            click.option(
                "--boot-speed",
                type=Bounded(float, 0.01),
                default=None,
                help="Time scale of the engines' boot phases only (default: --speed).",
            ),
            click.option(
                "--server",
                type=click.Choice(["asyncssh", "openssh"]),
                default="asyncssh",
                show_default=True,
                help="SSH server of every node.",
            ),
            click.option(
                "--docker",
                type=click.Choice(["sim", "real"]),
                default="sim",
                show_default=True,
                help="Each node's docker: the simulated one, or a real Docker daemon per node "
                "with a loopback registry (Debian's docker.io, docker-registry, busybox-static).",
            ),
            click.option(
                "--link-mbps",
                type=Bounded(float, 0.001),
                default=None,
                help="Node-to-node link rate (Mbit/s of real image bytes) for `ssh PEER`.",
            ),
        ]
    ):
        func = option(func)
    return func


def _counts(fleet: SimFleet, node: str) -> tuple[int, int, int]:
    """(images, running containers, containers) on the node, from its real or simulated docker."""
    docker = fleet.real_docker
    if docker is None:
        containers = NodeState(fleet.node_dir(node)).containers()
        running = sum(1 for c in containers if c["State"].get("Running"))
        return len(fleet.images(node)), running, len(containers)
    try:
        images = docker.docker(node, "images", "-q").split()
        every = docker.docker(node, "ps", "-aq").split()
        running = docker.docker(node, "ps", "-q").split()
    except (RealDockerError, OSError):
        return 0, 0, 0
    return len(images), len(running), len(every)


def _summary(fleet: SimFleet) -> Table:
    stopped = set(fleet.status().get("stopped", []))  # type: ignore[call-overload]
    kind = "real Docker" if fleet.config.docker == "real" else "simulated docker"
    table = Table(
        title=f"simulated fleet in {fleet.root} ({kind}, node identity by {fleet.identity_mode})",
        title_justify="left",
    )
    for column in ("node", "ssh endpoint", "state", "images", "containers"):
        table.add_column(column)
    for node in fleet.nodes:
        images, running, containers = _counts(fleet, node.name)
        table.add_row(
            node.name,
            f"{node.host}:{node.port}",
            "[red]stopped[/red]" if node.name in stopped else "[green]up[/green]",
            str(images),
            f"{running} running / {containers}",
        )
    return table


@click.group(cls=GuidedGroup)
def sim() -> None:
    """A simulated DGX Spark fleet on loopback SSH endpoints (for the demo and the tests)."""


@sim.command()
@dir_option
@_fleet_options
def up(
    root: Path | None,
    nodes: int,
    speed: float,
    server: str,
    docker: str,
    link_mbps: float | None,
    boot_speed: float | None,
) -> None:
    """Start the fleet in the background and write its inventory into DIR."""
    fleet = SimFleet(
        _root(root),
        nodes,
        speed=speed,
        boot_speed=boot_speed,
        server=server,  # type: ignore[arg-type]
        docker=docker,  # type: ignore[arg-type]
        link_mbps=link_mbps,
    )
    fleet.start()
    kind = ", a Docker daemon per node" if docker == "real" else ""
    console.print(
        f"{nodes} simulated nodes up ({server}{kind}, port {fleet.port}, node identity by "
        f"{fleet.identity_mode}); inventory: {fleet.root}\n"
        f"try: cockpit --inventory {fleet.root} status, or ssh -F {fleet.ssh_config} dgx1"
        + (
            f"\nbench it with COCKPIT_TIME_SCALE={speed!r} (engine time runs {speed:g}x)"
            if speed != 1
            else ""
        )
    )


REAP_WAIT_S = 10.0
"""How long `sim down` waits for the fleet's exited processes to leave the process table."""


@sim.command()
@dir_option
def down(root: Path | None) -> None:
    """Stop the fleet in DIR: its servers and every container process; returns once they are
    all gone (exited, and reaped by their parent: a peer's `ps` no longer lists them)."""
    fleet = SimFleet.attach(_root(root))
    before = fleet.processes()
    fleet.stop()
    left = fleet.processes()
    if left:
        console.print(f"fleet in {fleet.root}: {len(left)} processes left running: {left}")
        raise SystemExit(1)
    listed = fleet.wait_reaped(before, REAP_WAIT_S)
    console.print(
        f"fleet in {fleet.root} stopped"
        + (f" ({len(listed)} exited processes not yet reaped by their parent)" * bool(listed))
    )


@sim.command("status")
@dir_option
def sim_status(root: Path | None) -> None:
    """Nodes of the fleet in DIR, their endpoints and containers."""
    fleet = SimFleet.attach(_root(root))
    if not fleet.running:
        console.print(f"no simulated fleet runs in {fleet.root}")
        raise SystemExit(1)
    console.print(_summary(fleet))


@sim.command("stop-node")
@click.argument("node")
@dir_option
def stop_node(node: str, root: Path | None) -> None:
    """Take NODE's SSH endpoint down (clients see it unreachable)."""
    SimFleet.attach(_root(root)).stop_node(node)
    console.print(f"{node}: ssh endpoint stopped")


@sim.command("start-node")
@click.argument("node")
@dir_option
def start_node(node: str, root: Path | None) -> None:
    """Bring NODE's SSH endpoint back."""
    SimFleet.attach(_root(root)).start_node(node)
    console.print(f"{node}: ssh endpoint started")


@sim.command("corrupt-snapshot")
@click.argument("node")
@click.argument("repo")
@dir_option
def corrupt_snapshot(node: str, repo: str, root: Path | None) -> None:
    """Make NODE's copy of model REPO differ from the others (its config.json changes)."""
    path = SimFleet.attach(_root(root)).corrupt_snapshot(node, repo)
    console.print(f"{node}: altered {path}")


@sim.command("corrupt-image")
@click.argument("node")
@click.option("--repo", default=None, help="The image's repository (default: the first by digest).")
@dir_option
def corrupt_image(node: str, repo: str | None, root: Path | None) -> None:
    """Make NODE's image held by digest another image (same digest, another id)."""
    wrong = SimFleet.attach(_root(root)).corrupt_image(node, repo)
    console.print(f"{node}: its digest now resolves to {wrong[:19]}")


@sim.command()
@click.argument("node")
@click.argument("fault")
@click.option("--off", is_flag=True, help="Clear the fault instead of setting it.")
@dir_option
def fault(node: str, fault: str, off: bool, root: Path | None) -> None:
    """Set (or clear) a named fault in NODE's node.json, read by the simulated engine."""
    SimFleet.attach(_root(root)).set_fault(node, fault, not off)
    console.print(f"{node}: fault {fault} {'cleared' if off else 'set'}")


@sim.command()
@click.argument("state", type=click.Choice(["up", "down"]))
@dir_option
def registry(state: str, root: Path | None) -> None:
    """Bring the fleet's registry up or take it down (pulls, and runs that need a manifest,
    then fail on every node as when a real registry does not answer)."""
    SimFleet.attach(_root(root)).set_registry(state == "up")
    console.print(f"registry {state}")


DEMO_RECIPE = "qwen3-0.6b-2x"
"""The demo's opening lane: the smallest recipe, its image already on its nodes."""


def demo_lane(inventory_dir: Path, wanted: str | None) -> Demo:
    """The demo of `LANE@CLUSTER` as asked, else of the demo recipe on its first cluster the
    fleet has (its load with the lane's API key); a lane the inventory does not have is refused
    with the lanes it does have."""
    from cockpit.api_key import lane_api_key
    from cockpit.config import load_inventory
    from cockpit.errors import InputError
    from cockpit.tui.demo import Demo

    inventory = load_inventory(inventory_dir)
    lanes = [f"{r.name}@{c}" for r in inventory.recipes.values() for c in r.lane.clusters]
    if wanted is None:
        recipe = inventory.recipes.get(DEMO_RECIPE)
        clusters = [c for c in (recipe.lane.clusters if recipe else []) if c in inventory.clusters]
        if not clusters:
            raise InputError(f"--lane: no {DEMO_RECIPE} lane on this fleet; pass --idle")
        wanted = f"{DEMO_RECIPE}@{clusters[0]}"
    if wanted not in lanes:
        raise InputError(f"--lane: no lane {wanted!r} (lanes: {', '.join(lanes)})")
    lane, _, cluster = wanted.partition("@")
    return Demo(LaneTarget(lane, cluster), api_key=lane_api_key(inventory.recipe(lane).env))


@click.command()
@_fleet_options
@click.option(
    "--lane",
    "lane",
    metavar="LANE@CLUSTER",
    default=None,
    help=f"The lane launched at start, with a light load on it (default: {DEMO_RECIPE} on its "
    "first cluster).",
)
@click.option("--idle", is_flag=True, help="Start with every lane stopped and no load.")
@click.pass_context
def demo(
    ctx: click.Context,
    nodes: int,
    speed: float,
    boot_speed: float | None,
    server: str,
    docker: str,
    link_mbps: float | None,
    lane: str | None,
    idle: bool,
) -> None:
    """Open the cockpit on a simulated fleet that lives as long as it does.

    One lane is launched as the fleet answers and a light synthetic load runs on it while it
    serves (`g` stops and starts the load; `--idle` for neither); the other lanes stay stopped.
    Serving runs at --speed (1: the seed's own rates); boots default to 20x so a first MiMo boot
    (autotune included) takes about a minute rather than the real ~20-40.
    """
    from cockpit.cli.tui_cmd import tui

    with tempfile.TemporaryDirectory(prefix="cockpit-demo-") as tmp:
        fleet = SimFleet(
            Path(tmp),
            nodes,
            speed=speed,
            boot_speed=boot_speed or max(20.0, speed),
            server=server,  # type: ignore[arg-type]
            docker=docker,  # type: ignore[arg-type]
            link_mbps=link_mbps,
            owner_pid=os.getpid(),  # the fleet stops itself if this process dies (e.g. SIGHUP)
        )
        with fleet:
            opening = None if idle else demo_lane(fleet.inventory_dir, lane)
            # the simulation's history stays with it: the operator's own store is left alone
            history = Path(tmp) / "history.db"
            ctx.obj = {
                **(ctx.obj or {}),
                "inventory": fleet.inventory_dir,
                "demo": opening,
                "history": history,
            }
            # the simulator's own launcher tells the bench how fast the engines' clock runs
            os.environ["COCKPIT_TIME_SCALE"] = repr(speed)
            ctx.invoke(tui)


COMMANDS = [sim, demo]
