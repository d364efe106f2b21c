"""Issue 31: a lock held by another cockpit appeared nowhere in the TUI until an operation was
refused. The Nodes pane shows whose operation holds a node, and when that lock went stale."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from rich.text import Text
from textual.widgets import DataTable

from cockpit.config import load_inventory
from cockpit.ops.locks import LEASE
from cockpit.ssh.inventory import pool_for
from cockpit.status.probe import Pace
from cockpit.tui.app import CockpitApp
from cockpit.tui.feeds.fleet import FleetFeed
from cockpit.tui.settings import TuiSettings
from cockpit.tui.widgets.nodes import NodesPane
from cockpit_sim.fleet import SimFleet
from tests.ops.test_leases_fleet import FOREIGN, plant_lock
from tests.tui.test_live_fleet import until


def rank_cells(app: CockpitApp) -> dict[str, str]:
    table: DataTable[Text] = app.screen.query_one(NodesPane).query_one(DataTable)
    return {str(key.value): table.get_row(key)[2].plain for key in table.rows}


async def test_the_nodes_pane_shows_a_foreign_lock_and_when_it_went_stale(
    fleet_factory: Callable[..., SimFleet], tmp_path: Path
) -> None:
    fleet = fleet_factory(2)
    inventory = load_inventory(fleet.inventory_dir)
    foreign = json.dumps({**FOREIGN, "since": 4e9})
    async with pool_for(inventory) as pool:
        await plant_lock(pool, "dgx1", foreign)
        await plant_lock(pool, "dgx2", foreign, age_s=int(LEASE.seconds) + 5)
        feed = FleetFeed(inventory, pool, Pace(gpu_ms=250, slow_s=0.5, images_every=2), 0.5)
        app = CockpitApp(inventory, feeds=[feed], settings=TuiSettings(tmp_path / "tui.toml"))
        async with app.run_test(size=(200, 48)) as pilot:
            await until(
                pilot,
                "both locks read",
                lambda s: all(n.lock is not None for n in s.nodes),
                30,
            )
            await pilot.pause(0.3)
            cells = rank_cells(app)
    assert cells["dgx1"] == "– · locked by alice@ops-laptop (launch mimo-v2-flash)", cells
    assert cells["dgx2"] == "– · stale lock of alice@ops-laptop (launch mimo-v2-flash)", cells
