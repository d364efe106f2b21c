"""A real-Docker fleet starts and goes away completely: `sim down`, a dead owner, a killed daemon.

"Completely" is checked from outside: no process with the fleet's marker (dockerd, containerd,
shims, registry, engines), no container process, no mount, no container cgroup, no socket folder,
no registry listening.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from cockpit.config import load_inventory
from cockpit.pids import pid_exists
from cockpit_sim.fleet import SimFleet
from tests.cli_runner import run_cockpit
from tests.fleet_fixtures import RealDockerTrace

pytestmark = [pytest.mark.realdocker, pytest.mark.slow]
QWEN = "qwen3-0.6b-2x"


def lane_image(fleet: SimFleet) -> str:
    return load_inventory(fleet.inventory_dir).recipe(QWEN).image.ref


def run_sleeper(fleet: SimFleet, node: str) -> int:
    """A `--gpus all` container (the GPU hook mounts into it) that ignores SIGTERM; its pid."""
    docker = fleet.real_docker
    assert docker is not None
    docker.docker(
        node, "run", "-d", "--name", "sleeper", "--gpus", "all", "--network", "host",
        "--entrypoint", "/bin/sleep", lane_image(fleet), "600",
    )  # fmt: skip
    return int(docker.docker(node, "inspect", "-f", "{{.State.Pid}}", "sleeper"))


def wait_gone(pid: int, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while pid_exists(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not pid_exists(pid)


def test_sim_up_docker_real_then_down_leaves_nothing(tmp_path: Path) -> None:
    root = tmp_path / "fleet"
    up = run_cockpit("sim", "up", "--docker", "real", "--nodes", "2", "--dir", root)
    assert up.returncode == 0, up.stderr
    fleet = SimFleet.attach(root)
    try:
        trace = RealDockerTrace.of(fleet)
        assert json.loads((root / "fleet.json").read_text())["docker"] == "real"
        status = run_cockpit("sim", "status", "--dir", root)
        assert status.returncode == 0 and "real Docker" in status.stdout
        sleeper = run_sleeper(fleet, "dgx2")
        assert pid_exists(sleeper)
    finally:
        down = run_cockpit("sim", "down", "--dir", root)
    assert down.returncode == 0, down.stderr
    assert wait_gone(sleeper, 5)
    assert trace.leftovers() == []


def test_fleet_stops_itself_when_its_owner_dies(fleet_factory: Callable[..., SimFleet]) -> None:
    owner = subprocess.Popen(["sleep", "600"])
    try:
        fleet = fleet_factory(2, docker="real", owner_pid=owner.pid)
        trace = RealDockerTrace.of(fleet)
        sleeper = run_sleeper(fleet, "dgx1")
    finally:
        owner.kill()
        owner.wait()
    deadline = time.monotonic() + 60
    while fleet.pid() is not None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert fleet.pid() is None, "the fleet outlived its owner"
    assert wait_gone(sleeper, 5)
    assert trace.leftovers() == []


def test_down_after_the_fleet_daemon_was_killed_leaves_nothing(
    fleet_factory: Callable[..., SimFleet],
) -> None:
    fleet = fleet_factory(2, docker="real")
    trace = RealDockerTrace.of(fleet)
    sleeper = run_sleeper(fleet, "dgx1")  # no fleet marker in its environment: only its cgroup
    pid = fleet.pid()
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while fleet.pid() is not None and time.monotonic() < deadline:  # a zombie counts as gone
        time.sleep(0.05)
    assert fleet.pid() is None
    assert pid_exists(sleeper), "the container does not die with the fleet's daemon"
    fleet.stop()
    assert wait_gone(sleeper, 5)
    assert trace.leftovers() == []
