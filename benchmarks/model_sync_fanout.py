"""Model snapshot sync: time(3 peers)/time(1 peer) of `sync-model`'s relay, on the simulated fleet.

The source (dgx1) holds a snapshot of the seed's Pro size (573.5 GB by default) in the HF layout:
`--shards` safetensors files, symlinks to blobs named by their sha256. Bytes are virtual as in
the image benchmark (`benchmarks/sync_fanout.py`): 1 MiB on disk stands for 1 GiB, and every
simulated link throttles to the real rate, so each node's one uplink (`uplink_mbps` in the
fleet's fleet.json) makes a transfer take as long as on the real link, divided by `--speed`.
The peers' model folders are removed, then the cockpit's own `sync_model` operation (plan, locks,
relay, verification of the pins) runs with width 1 (one chain: source → p1 → p2 …) and width K
(a star: the source sends K streams), for 1 and 3 peers.

    python benchmarks/model_sync_fanout.py [--size-gb 573.5] [--uplink-gbps 10] [--speed 25]
        [--write-results]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.results_md import write_section  # noqa: E402
from benchmarks.sync_fanout import Times, set_uplink, table  # noqa: E402
from cockpit.config import load_inventory  # noqa: E402
from cockpit.events import Finished, Notice  # noqa: E402
from cockpit.ops.context import OpContext  # noqa: E402
from cockpit.ops.history import BootHistory  # noqa: E402
from cockpit.ops.model_sync import sync_model  # noqa: E402
from cockpit.ssh.inventory import pool_for  # noqa: E402
from cockpit_sim.fleet import SimFleet  # noqa: E402
from cockpit_sim.tools.nodestate import GIB, SIM_BYTES_PER_GIB  # noqa: E402

RECIPE = "qwen3-0.6b-2x"
SOURCE = "dgx1"
CLUSTERS = {1: "2nodes-dac", 3: "4nodes-switch"}  # dgx1 and its first 1 or 3 peers


def model_folder(fleet: SimFleet, node: str, repo: str) -> Path:
    return fleet.node_dir(node) / "hf-cache" / "hub" / ("models--" + repo.replace("/", "--"))


def fill_source(fleet: SimFleet, repo: str, size_gb: float, shards: int) -> int:
    """`shards` blobs on SOURCE standing for `size_gb` GB, each linked from the snapshot; the real
    bytes written."""
    snapshot = fleet.snapshot_dir(SOURCE, repo)
    blobs = snapshot.parent.parent / "blobs"
    blobs.mkdir(exist_ok=True)
    per_shard = int(size_gb * 1e9 / GIB * SIM_BYTES_PER_GIB / shards)
    for i in range(shards):
        chunk = os.urandom(1 << 20)
        data = (chunk * (per_shard // len(chunk) + 1))[:per_shard]
        name = hashlib.sha256(data).hexdigest()
        (blobs / name).write_bytes(data)
        link = snapshot / f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        link.symlink_to(f"../../blobs/{name}")
    return per_shard * shards


async def one_sync(fleet: SimFleet, repo: str, count: int, width: int) -> float:
    """Remove the snapshot from the first `count` peers, sync it with `width` chains; seconds."""
    peers = [f"dgx{i}" for i in range(2, 2 + count)]
    for peer in peers:
        shutil.rmtree(model_folder(fleet, peer, repo), ignore_errors=True)
    inventory = load_inventory(fleet.inventory_dir)
    cluster = inventory.cluster(CLUSTERS[count])
    assert cluster.nodes == [SOURCE, *peers], cluster.nodes
    async with pool_for(inventory) as pool:
        ctx = OpContext(inventory, pool, BootHistory(fleet.root / "boot.json"), sync_width=width)
        started = time.monotonic()
        events = [e async for e in sync_model(ctx, inventory.recipe(RECIPE), cluster.name)]
        seconds = time.monotonic() - started
    end = events[-1]
    retried = [e.message for e in events if isinstance(e, Notice) and "retrying" in e.message]
    if not isinstance(end, Finished) or not end.ok or retried:
        raise SystemExit(f"sync not clean (a retry would distort the time): {end} {retried}")
    return seconds


async def measure(fleet: SimFleet, repo: str) -> Times:
    times: Times = {"chain": {}, "star": {}}
    for count in CLUSTERS:
        for topology in ("chain", "star"):
            width = 1 if topology == "chain" else count
            times[topology][count] = await one_sync(fleet, repo, count, width)
            print(f"{topology:5} {count} peer(s): {times[topology][count]:6.2f} s", flush=True)
    return times


NOTE = (
    "The chain's 3 peers cost about one transfer (each byte crosses each uplink once; a hop adds "
    "its latency and this machine's CPU for ssh, the link shim, tee, dd and tar on the same 2 "
    "cores); the star shares the source's uplink 3 ways. Both include the plan, the locks, the "
    "blobs-held check and the pins read again."
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-gb", type=float, default=573.5, help="the snapshot (seed: Pro)")
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--uplink-gbps", type=float, default=10.0)
    parser.add_argument("--speed", type=float, default=25.0)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="model-sync-fanout-") as tmp:
        fleet = SimFleet(Path(tmp) / "fleet", 4, speed=args.speed)
        fleet.start()
        try:
            set_uplink(fleet, args.uplink_gbps)
            repo = load_inventory(fleet.inventory_dir).recipe(RECIPE).model.repo
            real = fill_source(fleet, repo, args.size_gb, args.shards)
            times = asyncio.run(measure(fleet, repo))
        finally:
            fleet.stop()
    link_s = args.size_gb * 8 / args.uplink_gbps / args.speed
    command = (
        f"python benchmarks/model_sync_fanout.py --size-gb {args.size_gb:g} --shards "
        f"{args.shards} --uplink-gbps {args.uplink_gbps:g} --speed {args.speed:g}"
    )
    what = (
        f"Snapshot {args.size_gb:g} GB (virtual; {real / 2**20:.0f} MiB on disk) in "
        f"{args.shards} blobs, one {args.uplink_gbps:g} Gbit/s uplink per node, simulated time ÷ "
        f"{args.speed:g}; source dgx1, peers dgx2…; wall seconds of the whole `sync-model`. "
        f"The link alone takes {link_s:.1f} s for one transfer; the rest of the 1-peer time is "
        "this machine's CPU moving the real bytes, so the star's ratio stays below 3."
    )
    text = table(times, command, what) + "\n\n" + NOTE
    print()
    print(text)
    if args.write_results:
        write_section("model_sync_fanout", f"## Model snapshot sync: relay chain vs star\n\n{text}")


if __name__ == "__main__":
    main()
