"""A lane launched, benched and stopped through the real CLI on a simulated fleet leaves its rows
in the history, while a second cockpit writes the same store all along."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

from cockpit.bench import artifacts
from cockpit.history.records import NodeSample
from cockpit.history.writer import Writer
from cockpit_sim.fleet import SimFleet
from tests.cli_runner import run_cockpit

QWEN, CLUSTER = "qwen3-0.6b-2x", "2nodes-dac"


def test_launch_bench_stop_leave_their_rows_beside_a_second_writer(
    fleet_factory: Callable[..., SimFleet], tmp_path: Path
) -> None:
    fleet = fleet_factory(2, speed=200.0)
    state = tmp_path / "state"
    env = {"COCKPIT_STATE_DIR": str(state)}

    def cockpit(*args: str | Path, timeout: float = 180):
        return run_cockpit("--inventory", fleet.inventory_dir, *args, env=env, timeout=timeout)

    other = Writer(state / "history.db", None)  # another cockpit (a TUI) sampling meanwhile
    stop_other = threading.Event()
    written: list[float] = []

    def sample() -> None:
        at = time.time() - 2 * 86400  # within the retention the CLI runs prune by (30 days)
        while not stop_other.is_set():
            assert other.put(NodeSample("dgx9", at, 30.0, 1, 50.0))
            written.append(at)
            at += 30.0
            time.sleep(0.005)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        up = cockpit("launch", "-r", QWEN, "-c", CLUSTER, "--boot-timeout", "60")
        assert up.returncode == 0, up.stdout + up.stderr
        bench = cockpit(
            "bench", "--recipe", QWEN, "--cluster", CLUSTER, "--label", "history",
            "--depths", "0", "--concurrency", "1", "--runs", "1", "--no-warmup", "--tg", "1",
            "--reports", tmp_path / "reports", timeout=240,
        )  # fmt: skip
        assert bench.returncode == 0, bench.stdout + bench.stderr
    finally:
        down = cockpit("stop", "--lane", QWEN)
        stop_other.set()
        sampler.join()
        other.close()
    assert down.returncode == 0, down.stdout + down.stderr
    assert "warning" not in up.stderr + bench.stderr + down.stderr

    ops = json.loads(cockpit("history", "ops", "--format", "json").stdout)
    assert [(o["op"], o["lane"], o["outcome"]) for o in ops] == [
        ("launch", QWEN, "ok"), ("bench", QWEN, "ok"), ("stop", QWEN, "ok"),
    ]  # fmt: skip
    assert ops[0]["cluster"] == CLUSTER and set(ops[0]["nodes"].split(",")) == {"dgx1", "dgx2"}
    assert "ready at" in ops[0]["summary"] and ops[0]["who"].count("@") == 1
    (boot,) = json.loads(cockpit("history", "boots", "--format", "json").stdout)
    assert (boot["lane"], boot["head"], boot["outcome"]) == (QWEN, "dgx1", "ok")
    assert 0 < boot["seconds"] < 60
    assert {p["node"] for p in boot["phases"]} == {"dgx1", "dgx2"}
    assert "ready" in {p["phase"] for p in boot["phases"] if p["node"] == "dgx1"}
    (report,) = json.loads(cockpit("history", "benches", "--format", "json").stdout)
    assert (report["lane"], report["label"], report["depth"]) == (QWEN, "history", 0)
    # one token: at 200x a longer answer comes in one read, whose decode (and first token's
    # time) cannot be observed, and a point without a figure is not counted as measured
    (point,) = artifacts.load_report(Path(report["path"])).points
    assert point.pp is not None
    assert (report["points"], report["tg_c1"], report["pp_c1"]) == (1, point.tg, point.pp)
    figures = json.loads(
        cockpit("history", "node", "dgx9", "--since", "3d", "--format", "json").stdout
    )
    assert len(figures) == len(written) > 10  # the other cockpit lost nothing either
