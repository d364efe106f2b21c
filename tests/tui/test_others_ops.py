"""Issue 31: other cockpits were invisible. The TUI's Operations pane shows another cockpit's
operation in flight (from the records on its nodes), and the TUI's own operations are recorded
there for every other cockpit (`cockpit status` in another process sees them)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cockpit.config import load_inventory
from cockpit.ops.context import OpContext
from cockpit.ops.inflight import InFlight
from cockpit.ssh.inventory import pool_for
from cockpit.tui.app import CockpitApp
from cockpit.tui.feeds.fleet import FleetFeed
from cockpit.tui.fleet_ops import FleetOperations
from cockpit.tui.settings import TuiSettings
from cockpit.tui.state import NodeHealth
from cockpit_sim.engine.text import TOKENIZER_DIR
from cockpit_sim.fleet import SimFleet
from tests.cli_runner import run_cockpit
from tests.tui.test_live_fleet import press_on_lane, until
from tests.tui.test_live_fleet_faults import CLUSTER, PACE, QWEN, SPEED


def status_ops(fleet: SimFleet) -> list[dict[str, Any]]:
    done = run_cockpit("--inventory", fleet.inventory_dir, "status", "--format", "json")
    return json.loads(done.stdout)["operations"]


@pytest.mark.slow
async def test_the_operations_pane_shows_another_cockpits_launch_and_records_its_own(
    fleet_factory: Callable[..., SimFleet], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COCKPIT_STATE_DIR", str(tmp_path / "state"))
    fleet = fleet_factory(2, speed=SPEED)
    fleet.set_fault("dgx1", "hang_after_start")  # a launch waits on its head: it stays in flight
    inventory = load_inventory(fleet.inventory_dir)
    async with pool_for(inventory) as pool:
        ops = FleetOperations(OpContext(inventory, pool), tmp_path / "reports", TOKENIZER_DIR)
        inflight = InFlight(pool, inventory)
        app = CockpitApp(
            inventory,
            feeds=[FleetFeed(inventory, pool, PACE, 0.5)],
            operations=ops,
            settings=TuiSettings(tmp_path / "tui.toml"),
            inflight=inflight,
        )
        async with app.run_test(size=(160, 48)) as pilot:
            await until(pilot, "a live fleet",
                        lambda s: all(n.health is NodeHealth.LIVE for n in s.nodes), 30)  # fmt: skip
            other = subprocess.Popen(
                [sys.executable, "-m", "cockpit", "--inventory", str(fleet.inventory_dir),
                 "launch", "-r", QWEN, "-c", CLUSTER],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env={**os.environ, "COCKPIT_STATE_DIR": str(tmp_path / "other")},
            )  # fmt: skip
            try:
                snap = await until(pilot, "the other cockpit's launch",
                                   lambda s: any(o.record.pid == other.pid
                                                 and len(o.seen_on) == 2
                                                 for o in s.others()), 30)  # fmt: skip
                (seen,) = snap.others()
                assert (seen.record.op, seen.record.lane) == ("launch", QWEN)
                assert seen.seen_on == ("dgx1", "dgx2") and not snap.ops  # not this one's
                await pilot.pause(0.3)
                pane = str(app.screen.query_one("#ops-body").render())
                assert f"launch {QWEN} @ {CLUSTER} by {seen.record.holder}" in pane, pane
            finally:
                other.send_signal(signal.SIGTERM)  # it rolls back, its records go
                await asyncio.to_thread(other.wait, 60)
            await until(pilot, "its records gone", lambda s: not s.others(), 30)

            await press_on_lane(pilot, QWEN, "l")
            await pilot.press("y")
            await until(pilot, "this cockpit's launch booting",
                        lambda s: any(op.running and op.step.startswith(("boot", "ready"))
                                      for op in s.ops), 60)  # fmt: skip
            (mine,) = await asyncio.to_thread(status_ops, fleet)  # another process's view
            assert mine["record"]["pid"] == os.getpid() and mine["record"]["op"] == "launch"
            assert mine["seen_on"] == ["dgx1", "dgx2"]
            await pilot.press("x")  # cancel: the launch rolls back
            await until(pilot, "the launch rolled back",
                        lambda s: s.ops and not any(op.running for op in s.ops), 60)  # fmt: skip
            app.exit()
        await inflight.aclose()
    fleet.set_fault("dgx1", "hang_after_start", on=False)
    assert status_ops(fleet) == []
