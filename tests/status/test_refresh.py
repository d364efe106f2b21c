"""`FleetPoller.refresh`: over real SSH to a simulated node, a poke reaches the probe through the
stream supervisor and the node's slow facts (containers, memory) come again at once, not after
the probe's slow cycle."""

from __future__ import annotations

import asyncio
import time

from cockpit.status import FleetPoller, Pace
from cockpit_sim.fleet import SimFleet
from tests.ssh.test_fleet_backend import fleet_pool

SLOW = Pace(gpu_ms=200, slow_s=60, images_every=100, stagger=False)  # no look on its own


async def test_a_refresh_makes_the_node_list_its_containers_again_at_once(
    sim_fleet: SimFleet,
) -> None:
    async with fleet_pool(sim_fleet) as pool, FleetPoller(pool, ["dgx3"], SLOW) as poller:
        assert await poller.wait_first_round(15)
        first = poller.facts()["dgx3"].containers_at
        assert first is not None
        asked = time.time()
        poller.refresh("dgx3")
        async with asyncio.timeout(5):
            while (poller.facts()["dgx3"].containers_at or 0) <= first:
                await asyncio.sleep(0.05)
        print(f"listed again {time.time() - asked:.2f}s after the refresh")
