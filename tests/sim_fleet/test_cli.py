"""`cockpit sim up` / `sim down` as an operator runs them: nothing is left running after down."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import time
import tomllib
from pathlib import Path

from cockpit.config import load_inventory
from cockpit.pids import pid_exists
from cockpit_sim.fleet import SimFleet
from cockpit_sim.fleet.cleanup import holder_processes
from cockpit_sim.tools.nodestate import pid_alive
from tests.cli_runner import run_cockpit
from tests.sim_fleet.test_rendezvous import container, lane, start


def test_sim_up_writes_inventory_and_down_leaves_nothing(tmp_path: Path) -> None:
    root = tmp_path / "fleet"
    up = run_cockpit("sim", "up", "--nodes", "3", "--dir", root, "--speed", "4")
    assert up.returncode == 0, up.stderr
    fleet = SimFleet.attach(root)
    try:
        clusters = tomllib.loads((root / "clusters.toml").read_text())
        assert clusters["ssh"] == {
            "connect_timeout": 3.0,
            "known_hosts": "known_hosts",
            "identity_files": ["client_key"],
        }
        assert sorted(clusters["nodes"]) == ["dgx1", "dgx2", "dgx3"]
        assert sorted(clusters["clusters"]) == ["2nodes-dac"]
        assert (root / "client_key").stat().st_mode & 0o777 == 0o600
        assert len((root / "known_hosts").read_text().splitlines()) == 3
        inventory = load_inventory(root)
        assert inventory.recipes, "recipes that fit 2nodes-dac are copied"
        assert all(r.lane.clusters == ["2nodes-dac"] for r in inventory.recipes.values())
        status = run_cockpit("sim", "status", "--dir", root)
        assert status.returncode == 0 and status.stdout.count(" up ") == 3
        for node in ("dgx1", "dgx3"):  # every node's caches: its own folders, absolute
            assert inventory.nodes[node].model_cache == str(fleet.node_dir(node) / "hf-cache")
        down_reg = run_cockpit("sim", "registry", "down", "--dir", root)
        assert down_reg.returncode == 0 and not fleet.registry_up
        assert run_cockpit("sim", "registry", "up", "--dir", root).returncode == 0
        assert fleet.registry_up
        stop = run_cockpit("sim", "stop-node", "dgx2", "--dir", root)
        assert stop.returncode == 0
        # refusals exit 2 (1 is a fleet that failed): an unknown node, a second fleet there
        unknown = run_cockpit("sim", "stop-node", "dgx9", "--dir", root)
        assert unknown.returncode == 2 and "unknown node 'dgx9'" in unknown.stderr
        again = run_cockpit("sim", "up", "--nodes", "3", "--dir", root)
        assert again.returncode == 2 and "already runs" in again.stderr
        with socket.socket() as probe:
            assert probe.connect_ex((fleet.nodes[1].host, fleet.port)) != 0
        pid = fleet.pid()
    finally:
        down = run_cockpit("sim", "down", "--dir", root)
    assert down.returncode == 0, down.stderr
    assert pid is not None and fleet.pid() is None
    assert fleet.leftover_processes() == []
    with socket.socket() as probe:
        assert probe.connect_ex((fleet.nodes[0].host, fleet.port)) != 0


def test_no_fleet_in_the_folder_is_refused_with_the_command_that_makes_one(tmp_path: Path) -> None:
    status = run_cockpit("sim", "status", "--dir", tmp_path)
    assert status.returncode == 2
    assert status.stderr.splitlines() == [
        f"error: no simulated fleet in {tmp_path} (run `cockpit sim up --dir {tmp_path}`)"
    ]


def test_sim_down_returns_once_everything_is_gone(tmp_path: Path) -> None:
    """A lane serving, a long session open: when `sim down` returns, its daemon, the sessions,
    the engines and the nodes' namespace holders are all gone (not going)."""
    root = tmp_path / "fleet"
    up = run_cockpit("sim", "up", "--nodes", "2", "--dir", root, "--boot-speed", "200")
    assert up.returncode == 0, up.stderr
    fleet = SimFleet.attach(root)
    session = subprocess.Popen(
        ["/usr/bin/ssh", "-F", str(fleet.ssh_config), "-o", "BatchMode=yes", "dgx2", "sleep 300"],
        stdin=subprocess.DEVNULL,
    )
    try:
        plan = lane(fleet, "qwen3-0.6b-2x", "2nodes-dac")
        for rank in plan.launch_order:
            asyncio.run(start(fleet, rank))
        deadline = time.monotonic() + 30
        while not any(p for p in fleet.leftover_processes() if b"sleep\x00300" in cmdline(p)):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        engines = [container(fleet, r)["State"]["Pid"] for r in plan.ranks]
        running = [fleet.pid(), *engines, *fleet.leftover_processes(), *holder_processes(root)]
        assert all(running) and len(holder_processes(root)) == 2
        down = run_cockpit("sim", "down", "--dir", root)
        assert down.returncode == 0 and down.stdout.strip().endswith("stopped"), down.stdout
        alive = [pid for pid in running if pid_alive(pid)]
        assert alive == [], [cmdline(pid) for pid in alive]
        listed = [pid for pid in running if pid_exists(pid)]
        assert listed == [], [Path(f"/proc/{pid}/stat").read_text()[:60] for pid in listed]
        assert fleet.leftover_processes() == [] and holder_processes(root) == []
        with socket.socket() as probe:
            assert probe.connect_ex((fleet.nodes[1].host, fleet.port)) != 0
    finally:
        session.kill()
        session.wait()
        fleet.stop()


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
