"""llama-benchy against the built-in driver, the CLI, the probe and a hung engine, on the simulator."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner, Result

from cockpit.bench import artifacts, probe
from cockpit.bench import report as rep
from cockpit.bench.benchy_process import serve_book
from cockpit.bench.events import BenchWarning, PointStarted, SweepFinished
from cockpit.bench.models import FlagKind, PointSpec, SweepPlan
from cockpit.bench.quality import parse_perf_table, quality_argv
from cockpit.bench.remote import remote_argv, remote_events
from cockpit.bench.run import BenchRequest, bench
from cockpit.cli import main
from cockpit.config import load_inventory
from cockpit.events import OpEvent
from cockpit.ssh.inventory import pool_for
from cockpit_sim.engine.text import TOKENIZER_DIR
from cockpit_sim.fleet import SimFleet
from tests.bench.conftest import FLASH_SPEED
from tests.bench.sim_engine import SMALL, SPEEDS, running_engine
from tests.cli_runner import run_cockpit

LANE = "mimo26-flash-mopd-4x-sparkring"
COMPARE_POINTS = SweepPlan(depths=(0, 8192), tg=64).points
"""Both drivers' table: d0 and a warm-prefix depth, c1 and c2 (pp 2048, tg 64)."""


def _request(url: str, reports: Path, label: str, **kw: object) -> BenchRequest:
    settings: dict = {
        "lane": LANE,
        "cluster": "sim",
        "label": label,
        "endpoint": url,
        "points": SweepPlan(depths=(0, 16384), tg=128).points,
        "tokenizer_dir": TOKENIZER_DIR,
        "reports_dir": reports,
        "runs": 3,
        "warmup": False,
        "time_scale": SPEEDS[url],
        **kw,
    }
    return BenchRequest(**settings)


async def _report_of(req: BenchRequest) -> Path:
    last = [e async for e in bench(req)][-1]
    assert isinstance(last, SweepFinished), last
    return Path(last.report_json)


async def _benchy_vs_builtin(lane: str, reports: Path) -> tuple[Path, Path, list[str]]:
    """Both drivers on the same lane; the rows (c1 and c2) whose tg or pp differ by over 5 %."""
    # with the per-point warm-up run: a client's first stream pays its lazy imports
    shared: dict = {"points": COMPARE_POINTS, "warmup": True, "runs": 3}
    ours = await _report_of(_request(lane, reports, "builtin", **shared))
    theirs = await _report_of(
        _request(
            lane,
            reports,
            "llama-benchy",
            driver="llama-benchy",
            benchy_exe=(sys.executable, "-m", "llama_benchy"),
            **shared,
        )
    )
    a, b = artifacts.load_report(ours), artifacts.load_report(theirs)
    assert b.environment.driver.startswith("llama-benchy")
    assert b.baseline == ""  # another driver's report is no baseline (issue 15)
    assert len(b.points) == len(COMPARE_POINTS) and all(p.inference for p in b.points)
    misses = []
    for row in rep.compare(a, b):
        for metric, (x, y) in {"tg": (row.tg_a, row.tg_b), "pp": (row.pp_a, row.pp_b)}.items():
            assert x and y, row
            if abs(y - x) > 0.05 * x:
                misses.append(f"d{row.depth} c{row.concurrency} {metric}: {x:.1f} vs {y:.1f}")
    return ours, theirs, misses


@pytest.mark.timing
@pytest.mark.slow
async def test_llama_benchy_gives_the_same_table(compare_lane: str, tmp_path: Path) -> None:
    # Two clients on 2 shared cores: one stalled stream (a GC pause, a neighbour) spoils a pair
    # of runs, so a second pair is measured before calling the drivers different; both must miss.
    attempts = []
    for attempt in range(2):
        ours, theirs, misses = await _benchy_vs_builtin(compare_lane, tmp_path / f"try{attempt}")
        attempts.append(misses)
        if not misses:
            break
    assert not attempts[-1], attempts
    a, b = artifacts.load_report(ours), artifacts.load_report(theirs)
    text = rep.render_comparison(a, b, ours.name, theirs.name)
    print(text)
    assert "Δ tg" in text and "%" in text and "0 point(s) lower by over 5%" in text
    assert "NOT LIKE WITH LIKE: driver builtin vs llama-benchy" in text  # said, not refused


def _cockpit(*args: str | Path) -> Result:
    """The `cockpit` CLI in-process (a subprocess would pay the imports again)."""
    return CliRunner().invoke(main.cli, [str(a) for a in args], catch_exceptions=False)


def test_cli_bench_then_report_show_and_compare(flash_lane: str, tmp_path: Path) -> None:
    def args(label: str) -> list[str]:
        return [
            "bench",
            "--endpoint",
            flash_lane,
            "--lane",
            LANE,
            "--label",
            label,
            "--depths",
            "0",
            "--concurrency",
            "1",
            "--runs",
            "1",
            "--no-warmup",
            "--reports",
            str(tmp_path),
            "--tokenizer",
            str(TOKENIZER_DIR),
            "--time-scale",
            str(FLASH_SPEED),
        ]

    first = _cockpit(*args("cli"))
    assert first.exit_code == 0, first.output
    second = _cockpit(*args("cli-2"))
    assert second.exit_code == 0, second.output
    assert "report" in second.output and "tg t/s vs context depth" in second.output
    assert ".html" in second.output  # where the page went
    [a] = tmp_path.glob("*_cli.json")
    [b] = tmp_path.glob("*_cli-2.json")
    shown = _cockpit("report", "show", b)
    assert shown.exit_code == 0 and "## Depth" in shown.output and "Δ c1" in shown.output
    compared = _cockpit("report", "compare", a, b)
    assert compared.exit_code == 0 and "| d0 | c1 |" in compared.output
    # a cold run takes no warm report as its baseline, and compare refuses the pair (issue 15)
    cold = _cockpit(*args("cli-cold"), "--cold")
    assert cold.exit_code == 0, cold.output
    [c] = tmp_path.glob("*_cli-cold.json")
    assert (
        artifacts.load_report(c).baseline == "" and "Δ c1" not in c.with_suffix(".md").read_text()
    )
    refused = run_cockpit("report", "compare", b, c)
    assert refused.returncode == 2
    assert "not comparable: warm prefix vs cold" in refused.stderr


async def test_probe_sees_the_engine_flush_on_time(flash_lane: str) -> None:
    async with httpx.AsyncClient() as http:
        model = (await http.get(f"{flash_lane}/v1/models")).json()["data"][0]["id"]
    result = await probe.probe(flash_lane, model, scale=FLASH_SPEED, max_tokens=48)
    assert result.health_tokens == 8 and result.health_latency_ms > 0
    assert result.wire.status == 200 and result.wire.tokens == 48
    assert result.gaps is not None and result.engine_itl_ms is not None
    assert result.verdict.startswith("server flushes on time"), result.verdict


async def test_hang_is_detected_recorded_and_survived(tmp_path: Path) -> None:
    with running_engine(
        tmp_path / "engine", model=SMALL, tp=1, speed=10.0, faults=("hang_after_start",)
    ) as url:
        points = (PointSpec(0, 2, 256, 8),)  # test_driver_fake: the next point still runs
        req = BenchRequest(
            lane="small",
            cluster="sim",
            label="hang",
            endpoint=url,
            points=points,
            tokenizer_dir=TOKENIZER_DIR,
            reports_dir=tmp_path / "reports",
            runs=1,
            warmup=False,
            hang_timeout_s=1.0,
        )
        events = [e async for e in bench(req)]
    warnings = [e for e in events if isinstance(e, BenchWarning) and e.hang]
    assert len(warnings) == 2  # hung, retried; hung again, skipped
    last = events[-1]
    assert isinstance(last, SweepFinished) and not last.ok
    report = artifacts.load_report(Path(last.report_json))
    for point in report.points:
        assert point.skipped and point.has(FlagKind.HUNG)
        assert [h.action for h in point.hangs] == ["skipped", "skipped"]
        assert "connections to the engine port" in point.hangs[0].forensics
        assert "stream_chat" in point.hangs[0].forensics
    md = Path(last.report_md).read_text()
    assert "## Hung points (forensics)" in md and "skipped (hung)" in md


async def test_bench_host_streams_the_same_events_over_ssh(
    flash_lane: str, small_fleet: SimFleet, tmp_path: Path
) -> None:
    inventory = load_inventory(small_fleet.inventory_dir)
    node = small_fleet.names[0]
    req = _request(
        flash_lane,
        tmp_path,
        "remote",
        points=(PointSpec(0, 1, 2048, 32),),
        runs=1,
        client_host=node,
    )
    async with pool_for(inventory) as pool:

        def source(model: str, scale: float) -> AsyncIterator[OpEvent]:
            argv = remote_argv(
                [sys.executable, "-m", "cockpit"],
                flash_lane,
                model,
                scale,
                req.points,
                1,
                False,
                "builtin",
                60.0,
                req.lane,
                req.cluster,
                str(TOKENIZER_DIR),
            )
            return remote_events(pool, node, argv)

        events = [e async for e in bench(req, source=source)]
    assert any(isinstance(e, PointStarted) for e in events)
    last = events[-1]
    assert isinstance(last, SweepFinished) and last.ok
    report = artifacts.load_report(Path(last.report_json))
    assert report.environment.driver == f"builtin on {node}"
    # as the bench host reported it: a simulated node reaches the head over its management port
    assert report.environment.client_link == "wired (enP7s7, 10000 Mb/s)"
    assert report.points[0].tg and report.environment.latency_ms > 0


@pytest.mark.slow
async def test_tool_eval_bench_perf_part_runs_on_the_lane(flash_lane: str, tmp_path: Path) -> None:
    """Quality needs a real model; the invocation is checked with its perf part only."""
    exe = Path(sys.executable).parent / "tool-eval-bench"
    if not exe.exists():
        pytest.skip("tool-eval-bench is not installed")
    async with httpx.AsyncClient() as http:
        model = (await http.get(f"{flash_lane}/v1/models")).json()["data"][0]["id"]
    runner, book = await serve_book()
    try:
        argv = quality_argv(
            flash_lane,
            model,
            "perf",
            tmp_path,
            exe=str(exe),
            perf=True,
            depths=(0,),
            concurrency=(1,),
            tokenizer=TOKENIZER_DIR,
            benchy_args=("--book-url", book, "--skip-coherence"),
        )
        argv += ["--tg", "32", "--benchy-runs", "1", "--no-live"]
        env = {
            **os.environ,
            "HOME": str(tmp_path),
            "PATH": f"{exe.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=tmp_path,
        )
        try:
            _, err = await asyncio.wait_for(proc.communicate(), timeout=240)
        finally:
            if proc.returncode is None:  # timed out: never leave the client running
                proc.kill()
                await proc.wait()
    finally:
        await runner.cleanup()
    assert proc.returncode == 0, err.decode()[-2000:]
    [report] = list(tmp_path.glob("**/*--perf.md"))
    [row] = parse_perf_table(report.read_text())
    assert row.test == "pp2048 tg32 @ d0"
    tg = row.tg_tps / FLASH_SPEED  # its figures are wall-clock: ×10 the engine's
    assert 40 < tg < 100, tg  # the seed's 67.3 t/s, give or take the simulator's ×10 noise
