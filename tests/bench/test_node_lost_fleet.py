"""`cockpit sim stop-node dgx1` in the middle of `cockpit bench` on a simulated fleet: the bench
said exit 0, a whole report concluding "c2 ≥ c1 at every depth: NO" from points never measured,
`Cannot connect to host 127.0.0.1:42589` (the local forward) and 8 points measured in
`history benches` (issue 31)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from cockpit.bench.artifacts import load_report
from cockpit.config import load_inventory
from cockpit.plan import plan_lane
from cockpit_sim.fleet import SimFleet
from tests.cli_runner import run_cockpit

QWEN, CLUSTER = "qwen3-0.6b-2x", "2nodes-dac"


def _finished(url: str) -> float:
    """Requests the engine has finished (its own counter)."""
    text = httpx.get(f"{url}/metrics", timeout=5.0).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("vllm:request_success_total")
    )


def test_a_node_stopped_mid_bench_gives_a_partial_report_exit_1_and_its_history_row(
    fleet_factory: Callable[..., SimFleet], tmp_path: Path
) -> None:
    fleet = fleet_factory(2, speed=2.0)
    env = {"COCKPIT_STATE_DIR": str(tmp_path / "state")}

    def cockpit(*args: str | Path, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        return run_cockpit("--inventory", fleet.inventory_dir, *args, env=env, timeout=timeout)

    up = cockpit("launch", "-r", QWEN, "-c", CLUSTER, "--boot-timeout", "60")
    assert up.returncode == 0, up.stdout + up.stderr
    inventory = load_inventory(Path(fleet.inventory_dir))
    engine = plan_lane(inventory, inventory.recipe(QWEN), inventory.cluster(CLUSTER)).endpoint
    start = _finished(engine)
    reports = tmp_path / "reports"
    bench = subprocess.Popen(
        [
            sys.executable, "-m", "cockpit", "--inventory", str(fleet.inventory_dir), "bench",
            "--recipe", QWEN, "--cluster", CLUSTER, "--label", "lost", "--depths", "0,4096,8192",
            "--concurrency", "1,2", "--pp", "256", "--tg", "128", "--runs", "1", "--no-warmup",
            "--hang-timeout", "30", "--reports", str(reports),
        ],
        env={**os.environ, "COLUMNS": "200", "COCKPIT_TIME_SCALE": "2", **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while _finished(engine) < start + 3:  # 2 start-up warm-ups and the first point
            assert bench.poll() is None, bench.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        fleet.stop_node("dgx1")
        out, err = bench.communicate(timeout=120)
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.wait()
    assert bench.returncode == 1, out + err
    assert "Traceback" not in out + err and "Cannot connect to host 127.0.0.1" not in out + err
    listed = cockpit("history", "benches", "--format", "json")
    (row,) = json.loads(listed.stdout)
    report = load_report(Path(row["path"]))
    assert report.partial.startswith("engine lost at "), report.partial
    assert "dgx1 (" in report.partial and "not measured: " in report.partial
    measured = [p for p in report.points if not p.skipped]
    assert 1 <= len(measured) < 6 and row["points"] == len(measured)
    assert measured[0].tg is not None, measured[0].flags  # measured before the node went
    assert row["partial"] == report.partial and "PARTIAL" in out
    md = Path(row["path"]).with_suffix(".md").read_text()
    assert "at every depth: **NO**" not in md or "not known at depth" in md
