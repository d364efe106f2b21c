"""The TUI's bench plan: what the confirmation lists before anything is sent."""

from __future__ import annotations

from pathlib import Path
from typing import cast

from cockpit.config.inventory import PROJECT_RECIPES, load_inventory
from cockpit.ops.context import OpContext
from cockpit.ops.events import Planned
from cockpit.ssh import SshPool
from cockpit.tui.fleet_ops import FleetOperations
from cockpit.tui.operations import LaneTarget


async def test_bench_plan_marks_the_points_beyond_the_lanes_context(tmp_path: Path) -> None:
    # the plan is computed before any I/O: no pool is needed to see it
    ctx = OpContext(load_inventory(PROJECT_RECIPES), cast(SshPool, None))
    events = FleetOperations(ctx, tmp_path, tmp_path).bench(
        LaneTarget("qwen3-0.6b-2x", "dgx56-switch")
    )
    plan = await anext(events)
    await events.aclose()  # type: ignore[attr-defined]
    assert isinstance(plan, Planned)
    skipped = [s for s in plan.steps if "skipped: beyond max-model-len 32768" in s]
    assert len(plan.steps) == 14 and len(skipped) == 6  # 64K, 128K, 256K at c1 and c2
    assert plan.summary.startswith("8 points against ")
    assert "(6 beyond the lane's context skipped)" in plan.summary
