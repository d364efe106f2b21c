"""The probe has no simulator-only path: a real and a simulated node run the same script, and the
simulated node's facts come from the files a real node's come from.

The "real node" is a plain SSH server on loopback running the machine's bash with nothing of the
simulator (tests/ssh/conftest.py); the simulated one a node of the session fleet. Each node's
probe is read back from its processes: the argv of the stream supervisor that runs it.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from cockpit.plan.memory_fit import GB10_MEMORY_GIB
from cockpit.ssh import SshPool
from cockpit.status import FleetPoller, Pace
from cockpit.telemetry.gpu import parse_meminfo
from cockpit_sim.fleet import SimFleet
from tests.ssh.conftest import Lab
from tests.ssh.conftest import lab as plain_node_lab  # noqa: F401  (the fixture, under this name)
from tests.ssh.test_fleet_backend import fleet_pool

FAST = Pace(gpu_ms=200, slow_s=0.5, images_every=4)
GIB = 1 << 30
SIM_NODE = b"COCKPIT_SIM_NODE="


def probe_of(pids: list[int]) -> bytes | None:
    """The probe script one of these processes runs (the stream supervisor's command)."""
    for pid in pids:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if len(argv) > 4 and argv[3] == b"cockpit-stream" and b"emit mem" in argv[4]:
            return argv[4]
    return None


def node_processes(node_dir: Path) -> list[int]:
    """The processes of one simulated node (its sessions carry the node's directory)."""
    entry = f"COCKPIT_SIM_NODE_DIR={node_dir}".encode()
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and entry in (proc / "environ").read_bytes().split(b"\0"):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


async def test_a_real_and_a_simulated_node_run_the_same_probe(
    plain_node_lab: Lab,  # noqa: F811  (the imported fixture)
    sim_fleet: SimFleet,
) -> None:
    lab = plain_node_lab
    real = await lab.server()
    lab.trust(real)
    async with (
        SshPool([lab.endpoint("real1", real)], lab.settings()) as real_pool,
        fleet_pool(sim_fleet) as sim_pool,
        FleetPoller(real_pool, ["real1"], FAST) as real_poller,
        FleetPoller(sim_pool, ["dgx4"], FAST) as sim_poller,
    ):
        await asyncio.gather(real_poller.wait_first_round(15), sim_poller.wait_first_round(15))
        real_probe = probe_of([p.pid for p in real.procs])
        sim_probe = probe_of(node_processes(sim_fleet.node_dir("dgx4")))
        real_mem = real_poller.facts()["real1"].meminfo
        sim_mem = sim_poller.facts()["dgx4"].meminfo
    assert real_probe is not None and sim_probe is not None, "one probe on each node"
    assert real_probe == sim_probe, "byte-identical"
    assert not re.search(rb"COCKPIT_|SIM", sim_probe), "no simulator hook in the script"
    assert b"</proc/meminfo" in sim_probe
    host = parse_meminfo(Path("/proc/meminfo").read_text())
    assert real_mem is not None and host is not None and real_mem.total_bytes == host.total_bytes
    assert sim_mem is not None and abs(sim_mem.total_bytes / GIB - GB10_MEMORY_GIB) < 0.01


def test_nothing_above_the_ssh_boundary_reads_a_simulator_variable() -> None:
    """Only the simulator (sim/cockpit_sim, outside the product) may name its node variables."""
    package = Path(__file__).resolve().parents[2] / "cockpit"
    readers = [
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if re.search(r"COCKPIT_SIM_|COCKPIT_MEMINFO", path.read_text())
    ]
    assert readers == []
