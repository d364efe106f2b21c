"""Every tool in a node session sees that node: a GB10 with its own name, ids, memory and CX7.

Over real SSH on both server kinds (asyncssh endpoints, Debian's OpenSSH sshd), with the plain
tools a peer would use (`cat`, `free`, `hostname`, `ls`, `uname`, `ip`, `ibdev2netdev`), while the
machine running the fleet keeps its own identity.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cockpit.plan.memory_fit import GB10_MEMORY_GIB
from cockpit.telemetry.gpu import parse_meminfo
from cockpit_sim.fleet import SimFleet
from cockpit_sim.fleet.cleanup import holder_processes
from tests.fleet_fixtures import connect

FLEETS = [
    pytest.param("sim_fleet", id="asyncssh"),
    pytest.param("sshd_fleet", id="openssh", marks=pytest.mark.sshd),
]
GIB = 1 << 30
IDENTITY = (
    "hostname; cat /etc/hostname; uname -n; uname -m; cat /etc/machine-id; "
    "cat /proc/sys/kernel/random/boot_id; grep -c ^processor /proc/cpuinfo; "
    "free -b | awk '/^Mem:/ {print $2}'; ls /sys/class/infiniband | tr '\\n' ' '; echo; pwd; "
    "grep -c '^cpu[0-9]' /proc/stat"
)


@pytest.fixture(params=FLEETS)
def fleet(request: pytest.FixtureRequest) -> SimFleet:
    return request.getfixturevalue(request.param)


async def identity(fleet: SimFleet, node: str) -> list[str]:
    async with connect(fleet, node) as conn:
        return (await conn.run(IDENTITY, check=True)).stdout.splitlines()


async def test_each_node_is_a_gb10_of_its_own(fleet: SimFleet) -> None:
    seen = {n: await identity(fleet, n) for n in ("dgx1", "dgx2")}
    for node, lines in seen.items():
        name, etc_name, uname_n, machine, machine_id, boot_id, cpus, mem, ib, cwd, stat = lines
        assert name == etc_name == uname_n == node
        assert machine == "aarch64" and cpus == "20" and stat == "20"  # /proc/stat's cores too
        assert abs(int(mem) / GIB - GB10_MEMORY_GIB) < 0.01, mem
        assert ib.split() == sorted(json.loads(
            (fleet.node_dir(node) / "node.json").read_text())["hcas"]), "its RDMA devices"  # fmt: skip
        assert len(machine_id) == 32 and len(boot_id) == 36
        assert cwd == str(fleet.node_dir(node) / "home")
    assert seen["dgx1"][4] != seen["dgx2"][4] and seen["dgx1"][5] != seen["dgx2"][5]
    assert socket.gethostname() not in ("dgx1", "dgx2"), "the machine keeps its own name"
    host_mem = parse_meminfo(Path("/proc/meminfo").read_text())
    assert host_mem is not None and abs(host_mem.total_bytes / GIB - GB10_MEMORY_GIB) > 0.5


async def test_the_cx7_is_what_the_clusters_wire_and_nccl_uses(fleet: SimFleet) -> None:
    """dgx1 is on the switch (f0 pair) and on 2nodes-dac (f1 pair); dgx3 on the switch only."""
    script = (
        'ibdev2netdev; for d in /sys/class/infiniband/*; do echo "$(basename $d) '
        "$(cat $d/ports/1/state) $(ls $d/device/net) $(cat $d/ports/1/gid_attrs/types/3 "
        '2>/dev/null)"; done; ip -4 -o addr show dev enp1s0f0np0'
    )
    async with connect(fleet, "dgx1") as conn:
        one = (await conn.run(script, check=True)).stdout
    async with connect(fleet, "dgx3") as conn:
        three = (await conn.run(script, check=True)).stdout
    assert "rocep1s0f1 port 1 ==> enp1s0f1np1 (Up)" in one
    assert "rocep1s0f1 port 1 ==> enp1s0f1np1 (Down)" in three
    assert "rocep1s0f0 4: ACTIVE enp1s0f0np0 RoCE v2" in three
    assert "rocep1s0f1 1: DOWN enp1s0f1np1" in three
    host = next(n.host for n in fleet.nodes if n.name == "dgx3")
    fabric = three.strip().splitlines()[-1].split()[3]
    assert fabric.endswith(host.rsplit(".", 1)[1] + "/24") and fabric != f"{host}/24"


async def test_meminfo_follows_the_engine_through_the_mount(small_fleet: SimFleet) -> None:
    """The daemon rewrites the node's meminfo in place: a long session sees it change."""
    node_dir = small_fleet.node_dir("dgx2")
    async with connect(small_fleet, "dgx2") as conn:
        process = await conn.create_process(
            "while :; do awk '/^MemAvailable:/ {print $2}' /proc/meminfo; sleep 0.2; done"
        )
        idle = int(await process.stdout.readline())
        load = {"ts": time.time(), "mem_used_mib": 40 * 1024, "pid": os.getpid(), "phase": "idle"}
        deadline = time.monotonic() + 10
        while True:
            (node_dir / "gpu_load.json").write_text(json.dumps({**load, "ts": time.time()}))
            now = int(await process.stdout.readline())
            if idle - now > 39 * 1024 * 1024:
                break
            assert time.monotonic() < deadline, (idle, now)
        process.close()


async def test_a_node_keeps_its_name_between_sessions(small_fleet: SimFleet) -> None:
    async with connect(small_fleet, "dgx1") as conn:
        await conn.run("hostname spark-01", check=True)
        renamed = (await conn.run("hostname", check=True)).stdout
        await conn.run("hostname dgx1", check=True)
    assert renamed == "spark-01\n"
    assert socket.gethostname() != "spark-01"


async def test_a_dead_holder_is_replaced(small_fleet: SimFleet) -> None:
    root = small_fleet.root
    before = holder_processes(root)
    assert len(before) == 2
    os.kill(before[0], signal.SIGKILL)
    deadline = time.monotonic() + 10
    while len(set(holder_processes(root)) - set(before)) < 1:
        assert time.monotonic() < deadline, "no new holder"
        await asyncio.sleep(0.1)
    for node in ("dgx1", "dgx2"):
        assert (await identity(small_fleet, node))[0] == node


@pytest.mark.parametrize("mode", ["user-namespaces", "wrappers"])
async def test_identity_modes(mode: str, fleet_factory: Callable[..., SimFleet]) -> None:
    """Without root the namespaces live in a user namespace; with no namespaces at all only the
    wrappers answer, and the fleet says so."""
    made = fleet_factory(2, identity=mode)
    assert made.identity_mode == mode
    lines = await identity(made, "dgx2")
    assert lines[3] == "aarch64", "uname answers in every mode"
    if mode == "user-namespaces":
        assert lines[0] == "dgx2" and abs(int(lines[7]) / GIB - GB10_MEMORY_GIB) < 0.01
    else:
        assert lines[0] == socket.gethostname()


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A folder `nobody` may read (pytest's own are root's only)."""
    path = Path(tempfile.mkdtemp(prefix="cockpit-nobody-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_an_unprivileged_user_gets_the_node_namespace(open_dir: Path) -> None:
    """The user-namespaces mode as a user without privileges has it: a node's own setup, run as
    `nobody` inside `unshare --user --map-root-user`, shows the node (the fleet is root's; its
    folder is opened to `nobody` for the check)."""
    tmp_path = open_dir
    fleet = SimFleet(tmp_path / "fleet", 1, owner_pid=os.getpid())
    try:
        fleet.start()
        subprocess.run(["chmod", "-R", "a+rX", str(tmp_path)], check=True)
        setup = (fleet.node_dir("dgx1") / "identity" / "enter.sh").read_text()
        assert setup.endswith("exec sleep infinity\n")
        check = setup.removesuffix("exec sleep infinity\n") + (
            "hostname; awk '/^MemTotal:/ {print $2}' /proc/meminfo; ls /sys/class/infiniband; id -u"
        )
        done = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
             "unshare", "--user", "--map-root-user", "--mount", "--uts", "--propagation",
             "private", "--", "/bin/sh", "-c", check],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
    finally:
        fleet.stop()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split()
    assert lines[:3] == ["ready", "dgx1", str(int(GB10_MEMORY_GIB * 1024 * 1024))]
    assert lines[3:7] == ["roceP2p1s0f0", "roceP2p1s0f1", "rocep1s0f0", "rocep1s0f1"]
    assert lines[7] == "0", "root inside its user namespace only"
