"""Issue 31: a read-only view open during a CLI bench showed "no bench yet", and its advisor
raised "truncation: 100 % of 10 requests … raise max_tokens" about the bench's own requests. The
bench's record on the lane's nodes carries its points so far: the viewer follows its tail (kept
once the bench ended), and knows the requests are a bench's."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from cockpit.config import load_inventory
from cockpit.ssh.inventory import pool_for
from cockpit.tui.app import CockpitApp
from cockpit.tui.feeds.fleet import FleetFeed
from cockpit.tui.settings import TuiSettings
from cockpit.tui.state import LanePhase, StoreInput
from cockpit_sim.engine.text import TOKENIZER_DIR
from cockpit_sim.fleet import SimFleet
from tests.tui.test_live_fleet import until
from tests.tui.test_live_fleet_faults import CLUSTER, PACE, QWEN, lane, launched

SPEED = 20.0  # serving slow enough that the sweep lasts several probe rounds


@pytest.mark.slow
async def test_a_read_only_view_follows_another_cockpits_bench(
    fleet_factory: Callable[..., SimFleet], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COCKPIT_STATE_DIR", str(tmp_path / "state"))
    fleet = fleet_factory(2, speed=SPEED)
    inventory = load_inventory(fleet.inventory_dir)
    await launched(inventory)
    followed: list[tuple[int, int, float | None]] = []  # the viewer's bench rows, as they came
    hints: list[str] = []
    async with pool_for(inventory) as pool:
        app = CockpitApp(
            inventory,
            feeds=[FleetFeed(inventory, pool, PACE, 0.5)],
            settings=TuiSettings(tmp_path / "tui.toml"),
            readonly=True,
        )
        apply = app.store.apply

        def sampled(item: StoreInput) -> object:
            parts = apply(item)
            snap = app.store.snapshot(time.time())
            followed.extend(
                (row.depth, row.concurrency, row.tg_tps)
                for row in snap.bench
                if (row.depth, row.concurrency, row.tg_tps) not in followed
            )
            hints.extend(h.text for _, h in snap.hints if h.text not in hints)
            return parts

        app.store.apply = sampled  # type: ignore[method-assign]
        async with app.run_test(size=(160, 48)) as pilot:
            await until(pilot, "qwen serving", lambda s: lane(s).phase is LanePhase.SERVING, 60)
            bench = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "cockpit", "--inventory", str(fleet.inventory_dir),
                "bench", "--recipe", QWEN, "--cluster", CLUSTER, "--label", "followed",
                "--depths", "0,4096", "--concurrency", "1,2", "--tg", "64", "--runs", "1",
                "--no-warmup", "--tokenizer", str(TOKENIZER_DIR),
                "--reports", str(tmp_path / "reports"),
                env={**os.environ, "COCKPIT_TIME_SCALE": repr(SPEED),
                     "COCKPIT_STATE_DIR": str(tmp_path / "other")},
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            )  # fmt: skip
            snap = await until(pilot, "the other cockpit's bench points",
                               lambda s: len(s.bench) >= 2, 120)  # fmt: skip
            pane = str(app.screen.query_one("#bench").render())
            assert "no bench yet" not in pane
            assert {row.lane for row in snap.bench} == {QWEN}
            out, _ = await bench.communicate()
            assert bench.returncode == 0, out.decode()
            # its record is gone with it; the tail it showed stays
            snap = await until(pilot, "the bench's record gone", lambda s: not s.others(), 30)
            assert len(snap.bench) >= 2 and {row.lane for row in snap.bench} == {QWEN}
            app.exit()
    # the points as the bench measured them (a decode it could not observe has no rate)
    assert len({(d, c) for d, c, _ in followed}) >= 2, followed
    assert not [h for h in hints if h.startswith("truncation")], hints
