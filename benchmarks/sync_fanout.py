"""Image sync: relay chain vs parallel star, for 1, 3 and 7 peers, on the simulated fleet.

Each simulated node gets one uplink (`uplink_mbps` in the fleet's fleet.json: every stream a node
sends shares it, as on a real NIC). The script removes the lane's image from the peers, runs the
cockpit's own sync (`cockpit.ops.sync.sync_core`) with width 1 (one chain: source → p1 → p2 …) and
width K (a star: the source sends K streams), and prints the wall time of each and the ratio
time(7)/time(1). Virtual bytes: a 9.8 GiB image over a 10 Gbit/s uplink takes 8.4 s of real time
divided by the fleet's speed factor.

    python benchmarks/sync_fanout.py [--uplink-gbps 10] [--speed 1] [--write-results]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.results_md import write_section  # noqa: E402
from cockpit.config import load_inventory  # noqa: E402
from cockpit.ops.context import Emit, OpContext, Outcome  # noqa: E402
from cockpit.ops.events import Notice  # noqa: E402
from cockpit.ops.facts import FactsCollector  # noqa: E402
from cockpit.ops.history import BootHistory  # noqa: E402
from cockpit.ops.sync import sync_core  # noqa: E402
from cockpit.ops.sync_plan import plan_sync  # noqa: E402
from cockpit.sim.fleet import SimFleet  # noqa: E402
from cockpit.ssh.inventory import pool_for  # noqa: E402

RECIPE = "qwen3-0.6b-2x"
SOURCE = "dgx1"
PEER_COUNTS = (1, 3, 7)


async def one_sync(fleet: SimFleet, peers: list[str], width: int, image: dict) -> float:
    """Remove the image from `peers`, sync it from SOURCE with `width` chains; seconds taken."""
    for peer in peers:
        fleet.remove_image(peer, image["Id"])
    inventory = load_inventory(fleet.inventory_dir)
    recipe = inventory.recipe(RECIPE)
    async with pool_for(inventory) as pool:
        ctx = OpContext(inventory, pool, BootHistory(fleet.root / "boot.json"), sync_width=width)
        facts = await FactsCollector(pool, recipe, inventory.model_cache).collect([SOURCE, *peers])
        plan = plan_sync(recipe.image.ref, [SOURCE, *peers], facts, source=SOURCE, width=width)
        assert plan.transfer == tuple(peers), plan
        outcome = Outcome()
        started = time.monotonic()
        retried = [
            event.message
            async for event in sync_core(ctx, Emit("sync"), plan, outcome, None)
            if isinstance(event, Notice)
        ]
        seconds = time.monotonic() - started
    if not outcome.ok or retried:
        raise SystemExit(
            f"sync not clean (a retry would distort the time): {outcome.summary} {retried}"
        )
    return seconds


async def measure(fleet: SimFleet) -> dict[str, dict[int, float]]:
    image = next(i for i in fleet.images(SOURCE) if i.get("SimRepo") == "vllm/vllm-openai")
    times: dict[str, dict[int, float]] = {"chain": {}, "star": {}}
    for count in PEER_COUNTS:
        peers = [f"dgx{i}" for i in range(2, 2 + count)]
        for topology in ("chain", "star"):
            seconds = await one_sync(fleet, peers, 1 if topology == "chain" else count, image)
            times[topology][count] = seconds
            print(f"{topology:5} {count} peer(s): {seconds:6.2f} s", flush=True)
    return times


def table(times: dict[str, dict[int, float]], uplink: float, speed: float, size_gib: float) -> str:
    lines = [
        f"`python benchmarks/sync_fanout.py --uplink-gbps {uplink:g} --speed {speed:g}` "
        f"({date.today().isoformat()})",
        "",
        f"Image {size_gib:g} GiB (virtual), one {uplink:g} Gbit/s uplink per node, simulated time "
        f"÷ {speed:g}; source dgx1, peers dgx2…; wall seconds on this machine.",
        "",
        "| topology | 1 peer | 3 peers | 7 peers | time(7)/time(1) |",
        "|---|---:|---:|---:|---:|",
    ]
    for topology, row in times.items():
        cells = " | ".join(f"{row[c]:.2f}" for c in PEER_COUNTS)
        lines.append(f"| {topology} | {cells} | {row[7] / row[1]:.2f} |")
    lines += [
        "",
        "The star's time grows with K because the source's uplink is shared K ways; the chain's "
        "bytes cross each uplink once, and what it adds per peer here is CPU (every hop runs ssh, "
        "the link shim, tee, dd and docker load; all simulated nodes share this machine's cores).",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uplink-gbps", type=float, default=10.0)
    parser.add_argument("--speed", type=float, default=1.0)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sync-fanout-") as tmp:
        fleet = SimFleet(Path(tmp) / "fleet", 8, speed=args.speed)
        fleet.start()
        try:
            fleet_json = fleet.root / "fleet.json"
            config = json.loads(fleet_json.read_text())
            config["uplink_mbps"] = args.uplink_gbps * 1000
            fleet_json.write_text(json.dumps(config, indent=1))
            size = load_inventory(fleet.inventory_dir).recipe(RECIPE).image.size_gib
            times = asyncio.run(measure(fleet))
        finally:
            fleet.stop()
    text = table(times, args.uplink_gbps, args.speed, size)
    print()
    print(text)
    for topology, row in times.items():
        print(f"{topology}: time(7)/time(1) = {row[7] / row[1]:.2f}")
    if args.write_results:
        write_section("sync_fanout", f"## Image sync: relay chain vs parallel star\n\n{text}")


if __name__ == "__main__":
    main()
