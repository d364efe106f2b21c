"""The bench through a relay in front of the simulated lane (`relay.py`): a buffering proxy that
delivers each answer in one late read, and a relay that holds the start of the first measured
stream (the first bench after a boot)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cockpit.bench.artifacts import load_report
from cockpit.bench.events import SweepFinished
from cockpit.bench.models import FlagKind, PointSpec, Report
from cockpit.bench.run import BenchRequest, bench
from cockpit_sim.engine.text import TOKENIZER_DIR
from tests.bench.conftest import FLASH_SPEED
from tests.bench.relay import Relay, relayed

D0 = (PointSpec(0, 1, 64, 32), PointSpec(0, 2, 64, 32))


def _request(url: str, reports: Path, **kw: object) -> BenchRequest:
    settings: dict = {
        "lane": "mimo26-flash-mopd-4x-sparkring",
        "cluster": "sim",
        "label": "relay",
        "endpoint": url,
        "points": D0,
        "tokenizer_dir": TOKENIZER_DIR,
        "reports_dir": reports,
        "runs": 2,
        "warmup": False,
        "time_scale": FLASH_SPEED,
        **kw,
    }
    return BenchRequest(**settings)


async def _report(req: BenchRequest) -> tuple[Report, str]:
    last = [e async for e in bench(req)][-1]
    assert isinstance(last, SweepFinished), last
    return load_report(Path(last.report_json)), Path(last.report_md).read_text()


DRIVERS = {
    "builtin": {},
    "llama-benchy": {
        "driver": "llama-benchy",
        "benchy_exe": (sys.executable, "-m", "llama_benchy"),
    },
}


@pytest.mark.parametrize("metrics", [True, False], ids=["metrics", "no-metrics"])
@pytest.mark.parametrize("driver", list(DRIVERS))
async def test_an_answer_in_one_late_read_carries_no_rate_and_no_conclusion(
    flash_lane: str, tmp_path: Path, driver: str, metrics: bool
) -> None:
    """The issue's buffering proxy: tg 23,332 t/s at c1 and "c2 ≥ c1 at every depth: yes"."""
    async with relayed(Relay(flash_lane, mode="buffer", metrics=metrics)) as url:
        report, md = await _report(_request(url, tmp_path, **DRIVERS[driver]))
    for point in report.points:
        assert point.inference is not None, point
        assert point.tg is None and point.pp is None, (point.spec, point.tg, point.pp)
        assert point.has(FlagKind.UNOBSERVABLE), point.flags
        flag = next(f for f in point.flags if f.kind is FlagKind.UNOBSERVABLE)
        assert "reached the client in one read" in flag.message
        assert "no rate is reported" in flag.message
    assert "c2 ≥ c1 at every depth: **not known**" in md


@pytest.mark.timing  # two decode rates measured in wall time, and their ratio
@pytest.mark.parametrize("driver", list(DRIVERS))
async def test_a_run_read_faster_than_the_engines_own_rate_is_dropped(
    flash_lane: str, tmp_path: Path, driver: str
) -> None:
    """The first bench after a boot: the relay held the first measured stream's first tokens
    while the engine decoded on, then sent them one read each; that run read ~1.9x the engine's
    own time per output token (a 3x margin let it stand), the next one is the engine's."""
    relay = Relay(flash_lane, mode="late", hold_tokens=50, late_requests=frozenset({0}))
    async with relayed(relay) as url:
        req = _request(url, tmp_path, points=(PointSpec(0, 1, 64, 128),), **DRIVERS[driver])
        report, _ = await _report(req)
    [point] = report.points
    assert point.inference is not None and point.inference.dropped == 1, point.flags
    [flag] = [f for f in point.flags if f.kind is FlagKind.IMPLAUSIBLE]
    assert "1 of 2 runs dropped" in flag.message and "run 1" in flag.message
    assert "engine's own time per output token" in flag.message
    assert not point.has(FlagKind.UNOBSERVABLE)  # every token came in its own read
    assert point.inference.tg is not None and len(point.inference.tg.values) == 1
