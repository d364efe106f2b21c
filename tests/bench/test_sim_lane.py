"""The bench against the simulated 4x Flash lane: the seed's §3 honest shape and its artifact.

Runs are short (1 run, no per-point warm-up, tg 32) at the engine speed of `conftest.py`; every
figure is read in engine time (the driver divides by the speed the engine reports).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from cockpit.bench.artifacts import load_report
from cockpit.bench.events import BenchWarning, SweepFinished
from cockpit.bench.models import PERF_DEPTHS, SWEEP_DEPTHS, Flag, FlagKind, PointSpec, SweepPlan
from cockpit.bench.run import BenchRequest, bench
from cockpit_sim.engine.text import TOKENIZER_DIR
from tests.bench.conftest import FLASH_SPEED
from tests.bench.sim_engine import SPEEDS


def _request(url: str, points: tuple[PointSpec, ...], reports: Path, label: str) -> BenchRequest:
    return BenchRequest(
        lane="mimo26-flash-mopd-4x-sparkring",
        cluster="sim",
        label=label,
        endpoint=url,
        points=points,
        tokenizer_dir=TOKENIZER_DIR,
        reports_dir=reports,
        runs=1,
        warmup=False,
        time_scale=SPEEDS[url],
    )


async def _run(req: BenchRequest) -> tuple[list, SweepFinished]:
    events = [e async for e in bench(req)]
    last = events[-1]
    assert isinstance(last, SweepFinished)
    return events, last


@pytest.mark.timing  # the collapse is a ratio of two decode rates measured in wall time
async def test_cold_c2_sweep_is_flagged_at_every_deep_point(
    flash_lane: str, tmp_path: Path
) -> None:
    points = (
        PointSpec(65536, 1, 2048, 32, cold=True),
        *(PointSpec(d, 2, 2048, 32, cold=True) for d in (65536, 131072, 262144)),
    )
    events, last = await _run(_request(flash_lane, points, tmp_path, "cold"))
    report = load_report(Path(last.report_json))
    assert report.environment.time_scale == FLASH_SPEED
    assert "COLD" in report.environment.prefix_cache_mode
    c1 = report.point(65536, 1)
    assert c1 is not None and not c1.flags  # a single stream is immune
    for depth in (65536, 131072, 262144):
        point = report.point(depth, 2)
        assert point is not None and point.has(FlagKind.PREFILL_IN_DECODE), depth
        flag = next(f for f in point.flags if f.kind == FlagKind.PREFILL_IN_DECODE)
        assert "--enable-prefix-caching" in flag.fix
        assert point.engine is not None and point.engine.prefill_tokens is not None
        assert point.engine.prefill_tokens > 2 * depth  # both contexts prefilled in the batch
    collapsed = report.point(65536, 2)
    assert collapsed is not None and collapsed.tg is not None and c1.tg is not None
    assert collapsed.tg < 0.5 * c1.tg and collapsed.has(FlagKind.C2_BELOW_C1)
    assert any(isinstance(e, BenchWarning) and e.flag for e in events)
    md = Path(last.report_md).read_text()
    assert "measured prefill, not decode" in md and "**Fix:**" in md


def _pp_noise(flag: Flag) -> bool:
    return flag.kind == FlagKind.NOISY and flag.message.startswith("pp ")


@pytest.mark.timing
async def test_warm_sweep_is_clean_with_c2_at_least_c1(flash_lane: str, tmp_path: Path) -> None:
    # The seed's sweep depths, tg 256 and 2 runs: a 32-token decode at 256K lasts 70 ms of wall
    # time at ×10, where one 30 ms stall of either process on the 2 shared cores moves tg by 40 %;
    # 256 tokens (0.6 s of wall time) keep one such stall to 5 %, inside the c2 − c1 margin.
    req = _request(flash_lane, SweepPlan(tg=256).points, tmp_path, "warm")
    _, last = await _run(replace(req, runs=2))
    report = load_report(Path(last.report_json))
    assert "warm prefix" in report.environment.prefix_cache_mode
    for point in report.points:
        # the decode is honest everywhere; a c2 pp total may be flagged noisy: it is one step's
        # wall time (~50 ms at ×10), so a 10 ms stall of either process on the shared cores
        # moves it by 20 %, and the report says so rather than quoting it
        unexpected = [f for f in point.flags if not _pp_noise(f)]
        assert not unexpected, (point.spec.label, point.flags)
        assert point.engine is not None and point.engine.prefill_tokens is not None
        # only the prompts were prefilled: the contexts came from the prefix cache
        assert point.engine.prefill_tokens < 1.5 * point.spec.concurrency * point.spec.pp
        if point.spec.depth:
            assert point.context is not None and point.context.pp is not None
    # the seed's honest shape: c2 (batch total) ≥ c1 at every depth
    shape = {}
    for depth in PERF_DEPTHS + SWEEP_DEPTHS:
        c1, c2 = report.point(depth, 1), report.point(depth, 2)
        assert c1 and c2 and c1.tg and c2.tg
        shape[depth] = (round(c1.tg, 1), round(c2.tg, 1))
    assert all(c2 >= c1 for c1, c2 in shape.values()), shape
