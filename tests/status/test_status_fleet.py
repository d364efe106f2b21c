"""`cockpit status` and its poller against the simulated fleet over SSH."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from cockpit.ssh import Backoff
from cockpit.status import FleetPoller, Health, Pace, fleet_status
from cockpit_sim.fleet import SimFleet
from tests.cli_runner import run_cockpit
from tests.ssh.test_fleet_backend import fleet_pool

FAST = Pace(gpu_ms=200, slow_s=0.5, images_every=4)


def test_cli_shows_every_node_healthy_with_its_images(sim_fleet: SimFleet) -> None:
    done = run_cockpit("--inventory", sim_fleet.inventory_dir, "status", "--format", "json")
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    nodes = {n["node"]: n for n in status["nodes"]}
    assert list(nodes) == [f"dgx{i}" for i in range(1, 9)]
    assert {n["health"] for n in nodes.values()} == {"ok"}
    assert all(n["gpu_name"] == "NVIDIA GB10" for n in nodes.values())
    assert all(n["memory"]["source"] == "meminfo" for n in nodes.values())
    # each node's own unified memory (a GB10's 119.7 GiB), not the machine running the fleet
    assert {round(n["memory"]["total_mib"] / 1024, 1) for n in nodes.values()} == {119.7}
    spark = next(i for i in status["images"] if "sparkring" in i["ref"])
    assert spark["presence"] == {f"dgx{i}": "digest" if i > 4 else "absent" for i in range(1, 9)}


def test_one_broken_cluster_leaves_the_fleets_status_usable(
    sim_fleet: SimFleet, tmp_path: Path
) -> None:
    """Issue 15: one typo in clusters.toml made `status` refuse the whole fleet (rc 2) with 7
    errors; now that cluster is marked broken, once, and every node is still reported."""
    inventory = tmp_path / "inventory"  # the fleet's own files (its nodes' folders stay)
    inventory.mkdir()
    for path in sim_fleet.inventory_dir.iterdir():
        if path.is_file():
            shutil.copy2(path, inventory)
    clusters = inventory / "clusters.toml"
    text = clusters.read_text()
    clusters.write_text(text.replace('fabric = "direct-pair"', 'fabirc = "direct-pair"', 1))
    line = next(n for n, t in enumerate(clusters.read_text().splitlines(), 1) if "fabirc" in t)
    problem = (
        f"{clusters}:{line}: clusters.2nodes-dac.fabirc: unknown key 'fabirc' "
        "(did you mean 'fabric'?)"
    )
    done = run_cockpit("--inventory", inventory, "status", "--format", "json")
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"error: cluster 2nodes-dac: broken: {problem}"]
    status = json.loads(done.stdout)
    assert [n["node"] for n in status["nodes"]] == [f"dgx{i}" for i in range(1, 9)]
    assert {n["health"] for n in status["nodes"]} == {"ok"}
    assert status["broken"] == [f"cluster 2nodes-dac: broken: {problem}"]
    checked = run_cockpit("--inventory", inventory, "validate")  # still every error, exit 2
    assert checked.returncode == 2 and checked.stderr.splitlines()[0] == f"error: {problem}"
    refused = run_cockpit("--inventory", inventory, "status", "--cluster", "2nodes-dac")
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [f"error: cluster '2nodes-dac' is broken: {problem}"]
    recipe = next(p.stem for p in inventory.glob("*.toml") if "2nodes-dac" in p.read_text()
                  and p.name != "clusters.toml")  # fmt: skip
    launch = run_cockpit("--inventory", inventory, "launch", "-r", recipe, "-c", "2nodes-dac")
    assert launch.returncode == 2, (launch.stdout, launch.stderr)  # refused, with why
    assert f"refused: cluster '2nodes-dac' is broken: {problem}" in launch.stdout
    assert not launch.stderr  # no warning beside the refusal that names the same mistake
    stop = run_cockpit("--inventory", inventory, "stop", "-c", "4nodes-switch")  # dgx1-4
    assert stop.returncode == 2, (stop.stdout, stop.stderr)
    assert (
        "cluster '4nodes-switch' shares dgx1, dgx2 with cluster 2nodes-dac: broken" in stop.stdout
    )


def test_cli_table_names_the_unreachable_node(fleet_factory: Callable[..., SimFleet]) -> None:
    fleet = fleet_factory(8)
    fleet.stop_node("dgx3")
    started = time.monotonic()
    done = run_cockpit("--inventory", fleet.inventory_dir, "status")
    assert time.monotonic() - started < 20
    assert done.returncode == 1
    assert "dgx3: unreachable" in done.stdout and "connection refused" in done.stdout
    assert done.stdout.count(" ok ") == 7


OPENSSH_STOP = [pytest.mark.sshd]


@pytest.mark.parametrize("server", ["asyncssh", pytest.param("openssh", marks=OPENSSH_STOP)])
async def test_poller_marks_a_dead_node_down_and_recovers(
    server: str, fleet_factory: Callable[..., SimFleet]
) -> None:
    fleet = fleet_factory(2, server=server)

    def status():  # type: ignore[no-untyped-def]
        return {
            r.node: r for r in fleet_status(poller.links(), poller.facts(), [], time.time()).rows
        }

    async with (
        fleet_pool(fleet, 1.0, backoff=Backoff(0.2, 0.5)) as pool,
        FleetPoller(pool, ["dgx1", "dgx2"], FAST) as poller,
    ):
        await poller.wait_first_round(15)
        assert {r.health for r in status().values()} == {Health.OK}
        samples = poller.facts()["dgx1"].gpu_samples
        fleet.stop_node("dgx2")
        stopped = time.monotonic()
        while status()["dgx2"].health is not Health.DOWN:
            assert time.monotonic() - stopped < 2.0, status()["dgx2"]
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)
        assert status()["dgx1"].health is Health.OK
        assert poller.facts()["dgx1"].gpu_samples > samples
        fleet.start_node("dgx2")
        restarted = time.monotonic()
        while status()["dgx2"].health is not Health.OK:
            assert time.monotonic() - restarted < 10.0, status()["dgx2"]
            await asyncio.sleep(0.1)
    deadline = time.monotonic() + 5
    while fleet.leftover_processes() and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert fleet.leftover_processes() == []
