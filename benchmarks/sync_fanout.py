"""Image sync: relay chain vs parallel star, on the simulated fleet or on real Docker daemons.

Each simulated node gets one uplink (`uplink_mbps` in the fleet's fleet.json: every stream a node
sends shares it, as on a real NIC). The script removes the lane's image from the peers, runs the
cockpit's own sync (`cockpit.ops.sync.sync_core`) with width 1 (one chain: source → p1 → p2 …) and
width K (a star: the source sends K streams), and prints the wall time of each and the ratio
time(K)/time(1).

Simulated docker (default): 8 nodes, 1, 3 and 7 peers, virtual bytes: a 9.8 GiB image over a
10 Gbit/s uplink takes 8.4 s of real time divided by the fleet's speed factor.

`--docker real`: 4 nodes with a Docker daemon each, 1 and 3 peers, a real image of `--image-mb`
random bytes (built on the source, pushed to the fleet's registry) moved by one real `docker save`
into real `docker load`s, each peer's digest re-attached by `docker pull` and its id verified.
Bytes are real, so the uplink rates are too; each rate of `--uplink-gbps` gets its own table.

    python benchmarks/sync_fanout.py [--uplink-gbps 10] [--speed 1] [--write-results]
    python benchmarks/sync_fanout.py --docker real [--image-mb 128] [--uplink-gbps 0.1,1] [...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.results_md import write_section  # noqa: E402
from cockpit.config import load_inventory  # noqa: E402
from cockpit.config.models import Recipe  # noqa: E402
from cockpit.events import Notice, Progress  # noqa: E402
from cockpit.ops.context import Emit, OpContext, Outcome  # noqa: E402
from cockpit.ops.facts import FactsCollector  # noqa: E402
from cockpit.ops.history import BootHistory  # noqa: E402
from cockpit.ops.sync import sync_core  # noqa: E402
from cockpit.ops.sync_plan import plan_sync  # noqa: E402
from cockpit.ssh.inventory import pool_for  # noqa: E402
from cockpit_sim.fleet import SimFleet  # noqa: E402
from cockpit_sim.fleet.lane_images import registry_repository  # noqa: E402
from cockpit_sim.fleet.realdocker import import_busybox  # noqa: E402

RECIPE = "qwen3-0.6b-2x"
SOURCE = "dgx1"
PEER_COUNTS = (1, 3, 7)
REAL_PEER_COUNTS = (1, 3)


async def one_sync(
    fleet: SimFleet, recipe: Recipe, peers: list[str], width: int, remove: Callable[[str], None]
) -> tuple[float, float]:
    """Remove the image from `peers`, sync it from SOURCE with `width` chains; seconds taken,
    and seconds until the last byte reached the last peer (the rest: load, pull, id check)."""
    for peer in peers:
        remove(peer)
    inventory = load_inventory(fleet.inventory_dir)
    async with pool_for(inventory) as pool:
        ctx = OpContext(inventory, pool, BootHistory(fleet.root / "boot.json"), sync_width=width)
        facts = await FactsCollector(pool, recipe, inventory.model_cache).collect([SOURCE, *peers])
        plan = plan_sync(recipe.image.ref, [SOURCE, *peers], facts, source=SOURCE, width=width)
        assert plan.transfer == tuple(peers), plan
        outcome = Outcome()
        started = time.monotonic()
        retried = []
        last_bytes = started  # when the last peer's dd reported its last bytes: transfer done
        async for event in sync_core(ctx, Emit("sync"), plan, outcome, None):
            if isinstance(event, Notice):
                retried.append(event.message)
            elif isinstance(event, Progress) and event.unit == "B":
                last_bytes = time.monotonic()
        seconds = time.monotonic() - started
    if not outcome.ok or retried:
        raise SystemExit(
            f"sync not clean (a retry would distort the time): {outcome.summary} {retried}"
        )
    return seconds, last_bytes - started


Times = dict[str, dict[int, float]]


async def measure(
    fleet: SimFleet, recipe: Recipe, counts: tuple[int, ...], remove: Callable[[str], None]
) -> tuple[Times, Times]:
    """Total seconds and transfer seconds per topology and peer count."""
    times: Times = {"chain": {}, "star": {}}
    transfers: Times = {"chain": {}, "star": {}}
    for count in counts:
        peers = [f"dgx{i}" for i in range(2, 2 + count)]
        for topology in ("chain", "star"):
            width = 1 if topology == "chain" else count
            seconds, transfer = await one_sync(fleet, recipe, peers, width, remove)
            times[topology][count] = seconds
            transfers[topology][count] = transfer
            print(f"{topology:5} {count} peer(s): {seconds:6.2f} s (bytes in after "
                  f"{transfer:.2f} s)", flush=True)  # fmt: skip
    return times, transfers


def table(times: Times, command: str, what: str, transfers: Times | None = None) -> str:
    """The results table; with `transfers`, a row per topology for the bytes' arrival too."""
    counts = sorted(times["chain"])
    last = counts[-1]
    header = " | ".join(f"{c} peer{'s' * (c > 1)}" for c in counts)
    lines = [
        f"`{command}` ({date.today().isoformat()})",
        "",
        what,
        "",
        f"| topology | {header} | time({last})/time(1) |",
        "|---|" + "---:|" * (len(counts) + 1),
    ]
    rows = [(t, "", times[t]) for t in times]
    if transfers is not None:
        rows = [r for t in times for r in ((t, "", times[t]), (t, " (bytes in)", transfers[t]))]
    for topology, suffix, row in rows:
        cells = " | ".join(f"{row[c]:.2f}" for c in counts)
        lines.append(f"| {topology}{suffix} | {cells} | {row[last] / row[1]:.2f} |")
    return "\n".join(lines)


SIM_NOTE = (
    "The star's time grows with K because the source's uplink is shared K ways; the chain's "
    "bytes cross each uplink once, and what it adds per peer here is CPU (every hop runs ssh, "
    "the link shim, tee, dd and docker load; all simulated nodes share this machine's cores)."
)


def run_sim(args: argparse.Namespace) -> str:
    with tempfile.TemporaryDirectory(prefix="sync-fanout-") as tmp:
        fleet = SimFleet(Path(tmp) / "fleet", 8, speed=args.speed)
        fleet.start()
        try:
            set_uplink(fleet, args.uplink_gbps)
            recipe = load_inventory(fleet.inventory_dir).recipe(RECIPE)
            image = next(i for i in fleet.images(SOURCE) if i.get("SimRepo") == "vllm/vllm-openai")
            times, _ = asyncio.run(
                measure(fleet, recipe, PEER_COUNTS, lambda n: fleet.remove_image(n, image["Id"]))
            )
        finally:
            fleet.stop()
    command = "python benchmarks/sync_fanout.py " + (
        f"--uplink-gbps {args.uplink_gbps:g} --speed {args.speed:g}"
    )
    what = (
        f"Image {recipe.image.size_gib:g} GiB (virtual), one {args.uplink_gbps:g} Gbit/s uplink "
        f"per node, simulated time ÷ {args.speed:g}; source dgx1, peers dgx2…; wall seconds on "
        "this machine."
    )
    return table(times, command, what) + "\n\n" + SIM_NOTE


def big_image(fleet: SimFleet, recipe: Recipe, megabytes: int) -> Recipe:
    """An image of `megabytes` random bytes on SOURCE, pushed (so it has its digest); the recipe
    pinned to it."""
    docker = fleet.real_docker
    assert docker is not None
    target = registry_repository(docker.registry.address, "bench/sync-blob") + ":1"
    blob = os.urandom(megabytes << 20)
    image_id = import_busybox(
        docker.daemons[SOURCE], target, fleet.root, files={"/blob": (blob, 0o644)}
    )
    docker.docker(SOURCE, "push", target, timeout=600)
    info = json.loads(docker.docker(SOURCE, "image", "inspect", image_id))[0]
    ref = info["RepoDigests"][0]
    image = recipe.image.model_copy(
        update={"ref": ref, "image_id": image_id, "size_gib": info["Size"] / (1 << 30)}
    )
    return recipe.model_copy(update={"image": image})


REAL_NOTE = (
    "With a slow link the transfer dominates and the topologies part as on a real fleet: the "
    "chain's 3 peers cost about one transfer, the star's share the source's uplink 3 ways. With "
    "a fast one this machine's 2 cores are the limit (one transfer of real bytes runs ssh twice, "
    "a link shim, tee, dd, docker save and load): every hop of the chain adds that work on the "
    "same cores, so both topologies grow with the peers here (and with the machine's load: these "
    "rows move from run to run); on real nodes each hop has its own CPU."
)


def run_real(args: argparse.Namespace) -> str:
    rates = [float(r) for r in str(args.uplink_gbps).split(",")]
    results = []
    with tempfile.TemporaryDirectory(prefix="sync-fanout-real-") as tmp:
        fleet = SimFleet(Path(tmp) / "fleet", 4, speed=args.speed, docker="real")
        fleet.start()
        try:
            docker = fleet.real_docker
            assert docker is not None
            recipe = big_image(fleet, load_inventory(fleet.inventory_dir).recipe(RECIPE),
                               args.image_mb)  # fmt: skip

            def remove(node: str) -> None:
                docker.docker(node, "rmi", "-f", recipe.image.image_id)

            for rate in rates:
                set_uplink(fleet, rate)
                print(f"uplink {rate:g} Gbit/s", flush=True)
                results.append(asyncio.run(measure(fleet, recipe, REAL_PEER_COUNTS, remove)))
        finally:
            fleet.stop()
    command = (
        f"python benchmarks/sync_fanout.py --docker real --image-mb {args.image_mb} "
        f"--uplink-gbps {args.uplink_gbps}"
    )
    what = (
        f"Real Docker (a dockerd per node, Debian's docker.io), an image of {args.image_mb} MiB "
        f"of random bytes ({recipe.image.size_gib * 1024:.0f} MiB as Docker counts it), one "
        "uplink per node (rate below, real bytes); source dgx1, peers dgx2…; each sync is one "
        "`docker save` into `docker load`s, then `docker pull` by digest and the id check on "
        "every peer; wall seconds on this machine (all nodes share its 2 cores). *bytes in*: "
        "until the last peer's `dd` reported its last byte (the transfer); the rest is `docker "
        "load` (Docker reads the whole archive before it registers a layer), the pull by digest "
        "and the id check."
    )
    parts = [f"`{command}` ({date.today().isoformat()})", "", what]
    for rate, (times, transfers) in zip(rates, results, strict=True):
        rows = table(times, command, what, transfers).split("\n")[4:]
        parts += ["", f"Uplink {rate:g} Gbit/s:", "", *rows]
    return "\n".join([*parts, "", REAL_NOTE])


def set_uplink(fleet: SimFleet, gbps: float) -> None:
    fleet_json = fleet.root / "fleet.json"
    config = json.loads(fleet_json.read_text())
    config["uplink_mbps"] = gbps * 1000
    fleet_json.write_text(json.dumps(config, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docker", choices=("sim", "real"), default="sim")
    parser.add_argument(
        "--uplink-gbps", default=None, help="default 10 (sim), 0.1,1 (real: one table a rate)"
    )
    parser.add_argument("--speed", type=float, default=1.0)
    parser.add_argument("--image-mb", type=int, default=128, help="real Docker: the image's size")
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    real = args.docker == "real"
    if args.uplink_gbps is None:
        args.uplink_gbps = "0.1,1" if real else "10"
    if not real:
        args.uplink_gbps = float(args.uplink_gbps)
    text = run_real(args) if real else run_sim(args)
    print()
    print(text)
    if args.write_results:
        name, title = (
            ("sync_fanout_real", "Image sync on real Docker: relay chain vs parallel star")
            if real
            else ("sync_fanout", "Image sync: relay chain vs parallel star")
        )
        write_section(name, f"## {title}\n\n{text}")


if __name__ == "__main__":
    main()
