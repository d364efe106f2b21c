"""A fleet of up to 256 nodes: addresses of its own on loopback, one daemon, `sim up` accepts it."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from cockpit_sim.fleet import SimFleet
from cockpit_sim.fleet.layout import MAX_NODES, node_host, node_names, random_subnet
from tests.cli_runner import run_cockpit
from tests.fleet_fixtures import connect


def test_addresses_of_256_nodes_are_distinct_loopback_ones_past_the_first_24() -> None:
    hosts = [node_host(name, "127.9.40") for name in node_names(MAX_NODES)]
    assert hosts[0] == "127.9.40.11" and hosts[244] == "127.9.40.255"  # dgx1, dgx245: as before
    assert hosts[245] == "127.9.41.0" and hosts[-1] == "127.9.41.10"  # then the next /24
    assert len(set(hosts)) == MAX_NODES
    assert all(ipaddress.ip_address(h).is_loopback for h in hosts)


def test_a_fleets_subnet_leaves_room_for_its_second_24() -> None:
    for _ in range(500):
        first, second, third = (int(x) for x in random_subnet().split("."))
        assert first == 127 and 1 <= second <= 254 and third % 2 == 0 and third + 1 <= 255


def test_sim_up_refuses_more_than_256_nodes(tmp_path: Path) -> None:
    up = run_cockpit("sim", "up", "--nodes", str(MAX_NODES + 1), "--dir", tmp_path / "f")
    assert up.returncode == 2
    assert "1<=x<=256" in up.stderr
    assert not (tmp_path / "f").exists()


@pytest.mark.slow
async def test_256_nodes_start_in_one_daemon_and_the_last_one_answers(tmp_path: Path) -> None:
    root = tmp_path / "fleet"
    up = run_cockpit("sim", "up", "--nodes", str(MAX_NODES), "--dir", root, timeout=240)
    try:
        assert up.returncode == 0, up.stderr
        fleet = SimFleet.attach(root)
        assert fleet.running and len(fleet.nodes) == MAX_NODES
        async with connect(fleet, f"dgx{MAX_NODES}") as conn:
            result = await conn.run("echo $COCKPIT_SIM_NODE; docker images -q | wc -l", check=True)
        node, images = result.stdout.split()
        assert node == f"dgx{MAX_NODES}" and int(images) > 0
    finally:
        down = run_cockpit("sim", "down", "--dir", root, timeout=120)
    assert down.returncode == 0, down.stderr
    assert SimFleet.attach(root).leftover_processes() == []
