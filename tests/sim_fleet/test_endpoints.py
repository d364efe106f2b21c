"""The nodes' SSH endpoints: env, streams, exit status, teardown of remote processes, host keys."""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import asyncssh
import pytest

from cockpit_sim.fleet import SimFleet
from tests.fleet_fixtures import connect


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


async def wait_group_gone(pgid: int, timeout: float = 5.0) -> bool:
    for _ in range(int(timeout / 0.05)):
        if not group_alive(pgid):
            return True
        await asyncio.sleep(0.05)
    return False


async def test_exec_runs_in_bash_with_the_node_env(sim_fleet: SimFleet) -> None:
    async with connect(sim_fleet, "dgx4") as conn:
        result = await conn.run(
            'echo "$COCKPIT_SIM_NODE $COCKPIT_SIM_NODE_DIR $HOME $BASH_VERSION"; '
            "command -v docker nvidia-smi ssh; exit 7",
            check=False,
        )
    node_dir = sim_fleet.node_dir("dgx4")
    first, *tools = result.stdout.splitlines()
    name, directory, home, bash_version = first.split(" ")
    assert (result.exit_status, name, directory, home) == (
        7,
        "dgx4",
        str(node_dir),
        str(node_dir / "home"),
    )
    assert bash_version and [Path(t).parent for t in tools] == [sim_fleet.root / "bin"] * 3


async def test_binary_stdin_stdout_round_trip(sim_fleet: SimFleet) -> None:
    payload = os.urandom(3 << 20) + bytes(range(256))
    async with connect(sim_fleet, "dgx1") as conn:
        echoed = await conn.run("cat", input=payload, encoding=None)
        digest = await conn.run("sha256sum", input=payload, encoding=None)
    assert echoed.stdout == payload
    assert digest.stdout.split()[0].decode() == hashlib.sha256(payload).hexdigest()


@pytest.mark.parametrize("how", ["close", "signal", "disconnect"])
async def test_remote_process_group_dies_with_the_session(sim_fleet: SimFleet, how: str) -> None:
    async with connect(sim_fleet, "dgx2") as conn:
        process = await conn.create_process("echo $$; sleep 300 & sleep 301")
        pgid = int(await process.stdout.readline())
        assert group_alive(pgid)
        if how == "close":
            process.close()
        elif how == "signal":
            process.send_signal("TERM")
            await process.wait()
        if how != "disconnect":
            assert await wait_group_gone(pgid)
    assert await wait_group_gone(pgid)


async def test_exit_signal_propagates(sim_fleet: SimFleet) -> None:
    async with connect(sim_fleet, "dgx2") as conn:
        result = await conn.run("kill -TERM $$", check=False)
    assert result.exit_signal is not None and result.exit_signal[0] == "TERM"


async def refuses_a_wrong_host_key(fleet: SimFleet, tmp_path: Path) -> None:
    """A known_hosts that holds dgx2's key for dgx1's address: the client must refuse."""
    entries = fleet.known_hosts.read_text().splitlines()
    dgx1, dgx2 = fleet.nodes[0], fleet.nodes[1]
    key_of_dgx2 = next(e for e in entries if e.startswith(f"[{dgx2.host}]")).split(" ", 1)[1]
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"[{dgx1.host}]:{dgx1.port} {key_of_dgx2}\n")
    with pytest.raises(asyncssh.HostKeyNotVerifiable):
        async with connect(fleet, "dgx1", known_hosts=str(wrong)):
            pass


async def test_wrong_host_key_is_refused(sim_fleet: SimFleet, tmp_path: Path) -> None:
    await refuses_a_wrong_host_key(sim_fleet, tmp_path)


async def test_unknown_client_key_is_refused(sim_fleet: SimFleet) -> None:
    stranger = asyncssh.generate_private_key("ssh-ed25519")
    with pytest.raises(asyncssh.PermissionDenied):
        async with connect(sim_fleet, "dgx1", client_keys=[stranger]):
            pass


async def test_node_to_node_ssh(sim_fleet: SimFleet) -> None:
    async with connect(sim_fleet, "dgx1") as conn:
        peer = await conn.run("ssh dgx7 'echo $COCKPIT_SIM_NODE; exit 3'", check=False)
        unknown = await conn.run("ssh dgx99 true", check=False)
    assert (peer.exit_status, peer.stdout) == (3, "dgx7\n")
    assert unknown.exit_status == 255 and "Could not resolve hostname dgx99" in unknown.stderr


async def test_stopped_node_is_unreachable_until_started(small_fleet: SimFleet) -> None:
    async with connect(small_fleet, "dgx1") as kept:
        small_fleet.stop_node("dgx1")
        with pytest.raises((asyncssh.Error, OSError)):
            await kept.run("true")
    with pytest.raises(OSError):
        async with connect(small_fleet, "dgx1"):
            pass
    async with connect(small_fleet, "dgx2") as other:
        assert (await other.run("echo up")).stdout == "up\n"
    small_fleet.start_node("dgx1")
    async with connect(small_fleet, "dgx1") as back:
        assert (await back.run("echo $COCKPIT_SIM_NODE")).stdout == "dgx1\n"


async def test_faults_and_corrupted_snapshot(
    fleet_factory: Callable[..., SimFleet], tmp_path: Path
) -> None:
    from cockpit.config import load_inventory
    from cockpit_sim.fleet.control import PROJECT_RECIPES

    model = next(iter(load_inventory(PROJECT_RECIPES).recipes.values())).model
    tree = tmp_path / "snapshots" / model.repo.replace("/", "--") / model.revision
    tree.mkdir(parents=True)
    (tree / "config.json").write_text('{"architectures": ["X"]}\n')
    fleet = fleet_factory(2, snapshots_dir=tmp_path / "snapshots")
    path = f"hf-cache/hub/{model.cache_dir_name}/snapshots/{model.revision}/config.json"
    fleet.corrupt_snapshot("dgx2", model.repo)
    fleet.set_fault("dgx2", "nccl_hang")
    sums = {}
    for node in ("dgx1", "dgx2"):
        async with connect(fleet, node) as conn:
            sums[node] = (await conn.run(f"sha256sum {path}")).stdout.split()[0]
    assert sums["dgx1"] == hashlib.sha256(b'{"architectures": ["X"]}\n').hexdigest()
    assert sums["dgx2"] != sums["dgx1"]
    facts = (fleet.node_dir("dgx2") / "node.json").read_text()
    assert '"nccl_hang": true' in facts
    fleet.set_fault("dgx2", "nccl_hang", on=False)
    assert "nccl_hang" not in (fleet.node_dir("dgx2") / "node.json").read_text()


def test_stop_leaves_nothing_running(fleet_factory: Callable[..., SimFleet]) -> None:
    fleet = fleet_factory(2)
    pid = fleet.pid()
    state = fleet.node_dir("dgx1")
    assert pid is not None

    async def start_work() -> None:
        async with connect(fleet, "dgx1") as conn:
            await conn.run(
                "docker run -d --name keep --entrypoint sleep "
                f"{fleet.images('dgx1')[0]['Id'][7:19]} 300"
            )
            await conn.create_process("sleep 302")

    asyncio.run(start_work())
    assert fleet.leftover_processes()
    fleet.stop()
    assert fleet.pid() is None and fleet.leftover_processes() == []
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert '"Running": false' in (state / "containers.json").read_text()


def test_fleet_stops_itself_when_its_owner_dies(fleet_factory: Callable[..., SimFleet]) -> None:
    """`cockpit demo` in a closed terminal: the owner dies without a teardown, the fleet follows."""
    owner = subprocess.Popen(["sleep", "600"])
    try:
        fleet = fleet_factory(2, owner_pid=owner.pid)
        assert fleet.running
    finally:
        owner.kill()
        owner.wait()
    deadline = time.monotonic() + 15
    while fleet.pid() is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert fleet.pid() is None, "the fleet outlived its owner"
    assert fleet.leftover_processes() == []
