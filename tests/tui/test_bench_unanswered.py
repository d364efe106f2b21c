"""The TUI's bench of a lane that is not running ends as a failed operation naming the lane and
its head (issue 31: it raised httpx's RemoteProtocolError, shown as that bare line)."""

from __future__ import annotations

from pathlib import Path

from cockpit.bench.models import SweepPlan
from cockpit.config import load_inventory
from cockpit.events import Finished
from cockpit.ops.context import OpContext
from cockpit.ssh.inventory import pool_for
from cockpit.tui.fleet_ops import FleetOperations
from cockpit.tui.operations import LaneTarget
from cockpit_sim.engine.text import TOKENIZER_DIR
from cockpit_sim.fleet import SimFleet

QWEN, CLUSTER = "qwen3-0.6b-2x", "2nodes-dac"


async def test_a_bench_of_a_lane_not_running_fails_naming_it(
    small_fleet: SimFleet, tmp_path: Path
) -> None:
    inventory = load_inventory(small_fleet.inventory_dir)
    plan = SweepPlan(depths=(0,), concurrency=(1,), pp=64, tg=16, runs=1)
    async with pool_for(inventory) as pool:
        ops = FleetOperations(OpContext(inventory, pool), tmp_path / "reports", TOKENIZER_DIR)
        events = [e async for e in ops.bench(LaneTarget(QWEN, CLUSTER), plan)]
    last = events[-1]
    assert isinstance(last, Finished) and last.exit_code == 1, last
    assert last.summary.startswith(
        f"the engine of {QWEN} on {CLUSTER} (head dgx1) does not answer: "
    ), last.summary
