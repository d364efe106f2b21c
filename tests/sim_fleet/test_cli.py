"""`cockpit sim up` / `sim down` as an operator runs them: nothing is left running after down."""

from __future__ import annotations

import socket
import tomllib
from pathlib import Path

from cockpit.config import load_inventory
from cockpit.sim.fleet import SimFleet
from tests.cli_runner import run_cockpit


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
