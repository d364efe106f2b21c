"""A bench that loses its engine mid-sweep: PARTIAL, not ok (exit 1), the node named instead of
the local forward's port, the points not measured listed, no conclusion from them; and a report
that reaches the history after a signal, as `history benches` shows it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from cockpit.bench.artifacts import load_report
from cockpit.bench.engine_loss import named
from cockpit.bench.events import PointFinished, SweepFinished
from cockpit.bench.models import Flag, FlagKind, PointResult, SweepPlan
from cockpit.bench.run import BenchRequest, _Sweep, bench
from cockpit.errors import EXIT_FAILED
from cockpit_sim.engine.text import TOKENIZER_DIR
from tests.bench.conftest import FLASH_SPEED
from tests.bench.fake_engine import FakeEngine, served
from tests.cli_runner import run_cockpit

POINTS = SweepPlan(depths=(0, 4096), concurrency=(1, 2), pp=64, tg=8).points
ENDPOINT = "http://10.0.0.1:30000"  # the lane's address; the bench dials a local forward


def test_the_forwards_address_becomes_the_node() -> None:
    message = (
        "Cannot connect to host 127.0.0.1:42589 ssl:default "
        "[Connect call failed ('127.0.0.1', 42589)]"
    )
    place = "dgx1 (http://10.0.0.1:30000)"
    said = named(message, "http://127.0.0.1:42589", place)
    assert "42589" not in said and said.count(place) == 2
    assert named(message, None, place) == message


def test_a_points_flags_name_the_node_not_the_forward(tmp_path: Path) -> None:
    req = BenchRequest(
        lane="qwen3-0.6b-2x", cluster="2nodes-dac", label="x", endpoint=ENDPOINT,
        points=POINTS, tokenizer_dir=TOKENIZER_DIR, head="dgx1",
    )  # fmt: skip
    sweep = _Sweep(req, "m", "", 1.0, remote=False, forwarded="http://127.0.0.1:42589")
    error = Flag(FlagKind.ERRORS, "1 of 2 requests failed: Cannot connect to host 127.0.0.1:42589")
    event = sweep.in_lane_terms(
        PointFinished(op="bench", result=PointResult(POINTS[0], None, flags=(error,)))
    )
    assert isinstance(event, PointFinished)
    [flag] = event.result.flags
    assert flag.message.endswith(f"Cannot connect to host dgx1 ({ENDPOINT})")


async def test_an_engine_lost_mid_sweep_ends_partial_and_not_ok(tmp_path: Path) -> None:
    engine = FakeEngine()
    req = BenchRequest(
        lane="qwen3-0.6b-2x", cluster="2nodes-dac", label="lost", endpoint=ENDPOINT,
        points=POINTS, tokenizer_dir=TOKENIZER_DIR, reports_dir=tmp_path, runs=1, warmup=False,
        head="dgx1",
    )  # fmt: skip
    events = []
    async with served(engine.app()) as url:
        stream = bench(req, local_url=url)
        async for event in stream:
            events.append(event)
            if isinstance(event, PointFinished):
                break  # the node goes down after the first point
    async for event in stream:  # the engine is gone: the next point measures nothing
        events.append(event)
    last = events[-1]
    assert isinstance(last, SweepFinished)
    assert not last.ok and last.exit_code == EXIT_FAILED and "PARTIAL" in last.summary
    report = load_report(Path(last.report_json))
    port = url.rsplit(":", 1)[1]
    assert report.partial.startswith(f"engine lost at {POINTS[1].label}: dgx1 ({ENDPOINT})")
    assert port not in report.partial
    assert report.partial.endswith("not measured: " + ", ".join(p.label for p in POINTS[1:])), (
        report.partial
    )
    measured = [p for p in report.points if not p.skipped]
    assert [p.spec for p in measured] == [POINTS[0]]
    assert [p.spec for p in report.points if p.skipped] == [POINTS[1]]  # the lost one, said so
    md = Path(last.report_md).read_text()
    assert md.startswith("# PARTIAL") and "c2 ≥ c1 at every depth: **not known**" in md
    assert "**NO**" not in md
    assert len(engine.requests) == 3  # 2 start-up warm-ups and the first point: nothing after


def _successes(url: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=5.0).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("vllm:request_success_total")
    )


def test_a_sweep_stopped_by_sigterm_is_in_history_as_partial(
    flash_lane: str, tmp_path: Path
) -> None:
    """Its PARTIAL report was written but never indexed: `history benches` did not list it."""
    env = {**os.environ, "COCKPIT_STATE_DIR": str(tmp_path / "state"), "COLUMNS": "200"}
    start = _successes(flash_lane)
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "cockpit", "bench", "--endpoint", flash_lane, "--tokenizer",
            str(TOKENIZER_DIR), "--label", "signalled", "--depths", "0,4096", "--concurrency",
            "1,2", "--pp", "64", "--tg", "256", "--runs", "1", "--no-warmup",
            "--time-scale", str(FLASH_SPEED), "--reports", str(tmp_path / "reports"),
        ],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while _successes(flash_lane) < start + 3:  # 2 start-up warm-ups and the c1 point
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0, out + err
    listed = run_cockpit("history", "benches", "--format", "json", env=env)
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)
    assert row["label"] == "signalled" and row["partial"].startswith("sweep cancelled after")
    report = load_report(Path(row["path"]))
    assert row["points"] == len([p for p in report.points if not p.skipped])
