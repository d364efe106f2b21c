"""Issue 19 on the simulated fleet: `cockpit status` checks image ids against the recipes' pins,
and the sync it names as the fix repairs a node whose digest points to a wrong image."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from cockpit_sim.fleet import SimFleet
from tests.cli_runner import run_cockpit

SPARKRING = "ghcr.io/fujitsupolycom/sparkring"


def _status(fleet: SimFleet) -> tuple[int, dict]:
    done = run_cockpit("--inventory", fleet.inventory_dir, "status", "--format", "json")
    return done.returncode, json.loads(done.stdout)


def test_a_corrupted_image_is_shown_with_its_fix_and_the_fix_repairs_it(
    fleet_factory: Callable[..., SimFleet],
) -> None:
    fleet = fleet_factory(8)
    wrong = fleet.corrupt_image("dgx6", SPARKRING)
    code, status = _status(fleet)
    assert code == 1
    spark = next(i for i in status["images"] if i["ref"].startswith(SPARKRING))
    assert spark["presence"]["dgx6"] == "wrong-id" and spark["presence"]["dgx5"] == "digest"
    (problem,) = status["problems"]
    assert problem["node"] == "dgx6" and "another image than the pinned id" in problem["message"]
    fix = problem["fix"].split()
    assert fix[:3] == ["cockpit", "sync-image", "--recipe"] and "--cluster" in fix, fix
    table = run_cockpit("--inventory", fleet.inventory_dir, "status")
    assert "✗ id" in table.stdout and f"fix: {problem['fix']}" in table.stdout
    synced = run_cockpit("--inventory", fleet.inventory_dir, *fix[1:])
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert "remove the wrong image on dgx6" in synced.stdout, synced.stdout
    ids = [i["Id"] for i in fleet.images("dgx6")]
    assert wrong not in ids
    code, status = _status(fleet)
    spark = next(i for i in status["images"] if i["ref"].startswith(SPARKRING))
    assert spark["presence"]["dgx6"] == "digest" and status["problems"] == [], status["problems"]


QWEN = "qwen3-0.6b-2x"


def _containers(fleet: SimFleet, node: str) -> list[dict]:
    return json.loads((fleet.node_dir(node) / "containers.json").read_text())


def _running(fleet: SimFleet, node: str) -> bool:
    return any(c["State"].get("Running") for c in _containers(fleet, node))


def test_a_launch_killed_mid_boot_leaves_orphans_that_status_names_with_the_stop(
    fleet_factory: Callable[..., SimFleet], tmp_path: Path
) -> None:
    """Issue 19: a cockpit killed mid-launch left containers with no owner, and nothing said so."""
    fleet = fleet_factory(2)
    env = {"COCKPIT_STATE_DIR": str(tmp_path / "state")}
    fleet.set_fault("dgx1", "hang_after_start")  # the launch waits on its head until killed
    launching = subprocess.Popen(
        [sys.executable, "-m", "cockpit", "--inventory", str(fleet.inventory_dir),
         "launch", "-r", QWEN, "-c", "2nodes-dac"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, **env},
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not all(_running(fleet, n) for n in ("dgx1", "dgx2")):  # the head starts last
        assert launching.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.5)  # mid-boot: the launch follows the ranks' logs
    launching.kill()  # SIGKILL: no rollback, no lock released
    launching.wait()
    code, status = _status(fleet)
    assert code == 1
    for node in status["nodes"]:
        assert node["containers"] is not None, (node, status["unknown"])
        (container,) = node["containers"]
        assert container["lane"] == QWEN and "never reached ready" in container["orphaned"], node
    fixes = {(p["node"], p["fix"]) for p in status["problems"]}
    assert fixes == {(n, f"cockpit stop --lane {QWEN}") for n in ("dgx1", "dgx2")}
    table = run_cockpit("--inventory", fleet.inventory_dir, "status")
    assert "ORPHANED" in table.stdout and f"fix: cockpit stop --lane {QWEN}" in table.stdout
    stopped = run_cockpit("--inventory", fleet.inventory_dir, "stop", "--lane", QWEN, env=env)
    assert stopped.returncode == 0, stopped.stdout
    assert "stale lock removed" in stopped.stdout  # the killed launch's locks, taken over aloud
    fleet.set_fault("dgx1", "hang_after_start", on=False)
    up = run_cockpit("--inventory", fleet.inventory_dir, "launch", "-r", QWEN, "-c", "2nodes-dac",
                     env=env)  # fmt: skip
    assert up.returncode == 0, up.stdout
    code, status = _status(fleet)
    assert status["problems"] == [] and code == 0, status["problems"]
    assert all(c["orphaned"] is None for n in status["nodes"] for c in n["containers"])
