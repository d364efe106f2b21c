"""The TUI's bench plan: what the confirmation lists before anything is sent, and the lane's last
plan the editor starts from."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import cast

import pytest

from cockpit.bench import artifacts, benchy
from cockpit.bench.events import SweepPlanned
from cockpit.bench.method import PhaseStats, Stat
from cockpit.bench.models import (
    Environment,
    PointResult,
    PointSpec,
    Report,
    SweepPlan,
)
from cockpit.config.inventory import PROJECT_RECIPES, load_inventory
from cockpit.errors import EXIT_REFUSED, InputError
from cockpit.events import Finished, OpEvent
from cockpit.ops.context import OpContext
from cockpit.ssh import SshPool
from cockpit.tui.app import CockpitApp
from cockpit.tui.fleet_ops import FleetOperations, report_headlines
from cockpit.tui.operations import LaneTarget

QWEN = LaneTarget("qwen3-0.6b-2x", "dgx56-switch")


def fleet_ops(reports: Path) -> FleetOperations:
    # the plan is computed before any I/O: no pool is needed to see it
    ctx = OpContext(load_inventory(PROJECT_RECIPES), cast(SshPool, None))
    return FleetOperations(ctx, reports, reports)


async def first_event(ops: FleetOperations, sweep: SweepPlan) -> OpEvent:
    events = ops.bench(QWEN, sweep)
    first = await anext(events)
    await events.aclose()  # type: ignore[attr-defined]
    return first


async def test_bench_plan_marks_the_points_beyond_the_lanes_context(tmp_path: Path) -> None:
    plan = await first_event(fleet_ops(tmp_path), SweepPlan())
    assert isinstance(plan, SweepPlanned) and plan.plan == SweepPlan()
    skipped = [s for s in plan.steps if "skipped: beyond max-model-len 32768" in s]
    assert len(plan.steps) == 14 and len(skipped) == 6  # 64K, 128K, 256K at c1 and c2
    assert plan.summary.startswith("8 points against ")
    assert "(6 beyond the lane's context skipped)" in plan.summary
    assert ", 3 run(s) each after a warm-up, warm prefix, builtin driver, " in plan.summary


async def test_bench_plan_is_the_one_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(benchy, "find_script", lambda: "/opt/llama-benchy")
    sweep = SweepPlan((0, 4096), (1, 2, 4), 512, 64, runs=5, cold=True, driver="llama-benchy")
    plan = await first_event(fleet_ops(tmp_path), sweep)
    assert isinstance(plan, SweepPlanned) and plan.plan == sweep
    assert plan.steps == tuple(p.label for p in sweep.points)
    assert plan.summary.startswith("6 points against ")
    assert ", 5 run(s) each after a warm-up, COLD (context + prompt as one request), " in (
        plan.summary
    )
    assert "llama-benchy driver" in plan.summary


async def test_llama_benchy_not_installed_refuses_before_the_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def missing() -> str:
        raise InputError("--driver llama-benchy: no llama-benchy script beside x nor on PATH")

    monkeypatch.setattr(benchy, "find_script", missing)
    first = await first_event(fleet_ops(tmp_path), SweepPlan(driver="llama-benchy"))
    assert isinstance(first, Finished) and first.exit_code == EXIT_REFUSED
    assert "no llama-benchy script" in first.summary


def test_the_lanes_last_plan_is_read_from_its_reports(tmp_path: Path) -> None:
    ops = fleet_ops(tmp_path)
    assert ops.last_bench_plan(QWEN) is None
    sweep = SweepPlan((0, 8192), (1,), runs=2)
    env = Environment("here", "loopback", "warm", "totals", "builtin", "http://x", "qwen3-0.6b")
    report = Report("tui", "2026-10-01_000000", QWEN.lane, QWEN.cluster, env, (), plan=sweep)
    artifacts.save_report(tmp_path, report)
    assert ops.last_bench_plan(QWEN) == sweep
    assert ops.last_bench_plan(LaneTarget(QWEN.lane, "2nodes-dac")) is None


def _benched(tg: float, created: str, cluster: str, *, cold: bool = False) -> Report:
    env = Environment("here", "loopback", "warm", "totals", "builtin", "http://x", "qwen3-0.6b")
    stat = Stat(tg, 0.5, (tg,))
    point = PointResult(
        PointSpec(4096, 2, 512, 32, cold=cold),
        PhaseStats(2, stat, stat, stat, stat, None, None, Stat(500, 5, (500,)), 2, 0),
    )
    return Report("cli", created, QWEN.lane, cluster, env, (point,))


def test_the_lanes_last_bench_is_read_from_its_reports_at_start(
    tmp_path: Path, make_app: Callable[..., CockpitApp]
) -> None:
    """Issue 31: the Lanes pane's "last bench" was empty on every start although reports
    existed; each lane's newest report fills it until this session benches the lane."""
    for report in (
        _benched(50.0, "2026-10-01_000000", QWEN.cluster),
        _benched(61.25, "2026-10-02_000000", QWEN.cluster),
        _benched(70.0, "2026-10-03_000000", "2nodes-dac", cold=True),
    ):
        artifacts.save_report(tmp_path, report, draw_now=False)
    headlines = report_headlines(tmp_path)
    assert headlines == {
        f"{QWEN.lane}@{QWEN.cluster}": "tg 61.2 t/s @4K c2",
        f"{QWEN.lane}@2nodes-dac": "tg 70.0 t/s @4K c2 COLD",
    }
    app = make_app(with_scene=False, headlines=headlines)
    lane = app.store.snapshot(0.0).lane(f"{QWEN.lane}@{QWEN.cluster}")
    assert lane is not None and lane.bench_headline == "tg 61.2 t/s @4K c2"
