"""Issue 31: with the TUI open, a lane launched by another cockpit (the CLI, or a second cockpit
process) read ORPHANED right after its launch returned, with "s on its row stops it": the
launcher's liveness was judged against lane records read before the launch marked its lane
ready. Every state the store takes is sampled here; none may hold an orphan."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from cockpit.config import load_inventory
from cockpit.ops.context import OpContext
from cockpit.ssh.inventory import pool_for
from cockpit.status.probe import Pace
from cockpit.tui.app import CockpitApp
from cockpit.tui.feeds.fleet import FleetFeed
from cockpit.tui.fleet_ops import FleetOperations
from cockpit.tui.settings import TuiSettings
from cockpit.tui.state import LanePhase, NodeHealth, NodeSampled, StoreInput
from cockpit_sim.engine.text import TOKENIZER_DIR
from cockpit_sim.fleet import SimFleet
from tests.tui.test_live_fleet import until
from tests.tui.test_live_fleet_faults import CLUSTER, KEY, QWEN, SPEED, lane

OPERATOR_PACE = Pace(gpu_ms=250, slow_s=5.0, images_every=2)
"""The default slow cycle (containers, locks, markers every 5 s) with quick GPU samples: a look
every 250 ms at the last round's records, as the issue's operator had it."""
WATCH_AFTER_S = 12.0  # two slow cycles after the launch returned
PEER_LAUNCH = """\
import asyncio, sys
from pathlib import Path
from cockpit.config import load_inventory
from cockpit.events import Finished
from cockpit.ops.context import OpContext
from cockpit.ops.launch import launch
from cockpit.ssh.inventory import pool_for

async def main(inventory_dir, recipe, cluster):
    inventory = load_inventory(Path(inventory_dir))
    async with pool_for(inventory) as pool:
        ctx = OpContext(inventory, pool)
        events = [e async for e in launch(ctx, inventory.recipe(recipe), cluster)]
    last = events[-1]
    sys.exit(0 if isinstance(last, Finished) and last.ok else 1)

asyncio.run(main(*sys.argv[1:]))
"""
"""A second cockpit: its own process, its own SSH connections, the operations' library."""


async def run(*argv: str, env: dict[str, str]) -> None:
    proc = await asyncio.create_subprocess_exec(
        *argv, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await proc.communicate()
    assert proc.returncode == 0, out.decode()


@pytest.mark.slow
async def test_a_lane_launched_by_another_cockpit_is_never_shown_orphaned(
    fleet_factory: Callable[..., SimFleet], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COCKPIT_STATE_DIR", str(tmp_path / "state"))
    fleet = fleet_factory(2, speed=SPEED)
    inventory = load_inventory(fleet.inventory_dir)
    env = {**os.environ, "COCKPIT_STATE_DIR": str(tmp_path / "others")}
    cli = [sys.executable, "-m", "cockpit", "--inventory", str(fleet.inventory_dir)]
    peer = [sys.executable, "-c", PEER_LAUNCH, str(fleet.inventory_dir), QWEN, CLUSTER]
    orphans: list[str] = []  # every orphan any state of the store held
    async with pool_for(inventory) as pool:
        ops = FleetOperations(OpContext(inventory, pool), tmp_path / "reports", TOKENIZER_DIR)
        feed = FleetFeed(inventory, pool, OPERATOR_PACE, 0.5)
        settings = TuiSettings(tmp_path / "tui.toml")
        app = CockpitApp(inventory, feeds=[feed], operations=ops, settings=settings)
        apply = app.store.apply

        def sampled(item: StoreInput) -> object:
            parts = apply(item)
            if isinstance(item, NodeSampled):
                orphans.extend(f"{item.node}: {r.orphaned}" for r in item.ranks if r.orphaned)
                view = app.store.snapshot(time.time()).lane(KEY)
                orphans.extend([view.state_text] if view is not None and view.orphaned else [])
            return parts

        app.store.apply = sampled  # type: ignore[method-assign]
        async with app.run_test(size=(160, 48)) as pilot:
            await until(pilot, "a live fleet",
                        lambda s: all(n.health is NodeHealth.LIVE for n in s.nodes), 30)  # fmt: skip
            for launcher in ([*cli, "launch", "-r", QWEN, "-c", CLUSTER], peer):
                await run(*launcher, env=env)
                returned = time.monotonic()
                await until(pilot, "the lane serving",
                            lambda s: lane(s).phase is LanePhase.SERVING, 30)  # fmt: skip
                await pilot.pause(max(WATCH_AFTER_S - (time.monotonic() - returned), 0.0))
                assert lane(app.store.snapshot(time.time())).phase is LanePhase.SERVING
                await run(*cli, "stop", "--lane", QWEN, env=env)
                await until(pilot, "the lane stopped",
                            lambda s: lane(s).phase is LanePhase.STOPPED, 30)  # fmt: skip
            app.exit()
    assert orphans == []
