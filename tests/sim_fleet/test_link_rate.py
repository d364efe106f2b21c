"""Node-to-node links: a configured rate makes image streams take the real transfer's time."""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable

from cockpit_sim.fleet import SimFleet
from cockpit_sim.tools.nodestate import GIB
from cockpit_sim.tools.ssh_shim import Throttle
from tests.fleet_fixtures import connect


def test_throttle_keeps_the_long_run_rate() -> None:
    throttle = Throttle(rate=400_000.0)
    start = time.monotonic()
    for _ in range(10):
        throttle.take(20_000)
    assert 0.45 < time.monotonic() - start < 0.8


async def test_image_stream_takes_the_seed_sync_time(
    fleet_factory: Callable[..., SimFleet],
) -> None:
    """Seed §1: 29.5 GiB moved in 206 s. A link of that rate, at speed 100, takes ~2.06 s."""
    size_gib, seconds, speed = 29.5, 206.0, 100.0
    mbps = size_gib * GIB * 8 / seconds / 1e6
    fleet = fleet_factory(2, link_mbps=mbps, speed=speed)
    image = next(i for i in fleet.images("dgx2") if "sparkring" in i["SimRepo"])
    assert image["Size"] == int(size_gib * GIB)
    async with connect(fleet, "dgx2") as conn:
        start = time.monotonic()
        await conn.run(f"docker save {shlex.quote(image['RepoDigests'][0])} | ssh dgx1 docker load")
        elapsed = time.monotonic() - start
    assert seconds / speed * 0.9 < elapsed < seconds / speed * 2.0
    assert any(i["Id"] == image["Id"] for i in fleet.images("dgx1"))
