"""The SSH backend against the simulated fleet: asyncssh endpoints and Debian OpenSSH sshd."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from cockpit.ssh import Backoff, Endpoint, HostKeyRejected, Link, NodeUnreachable, Settings, SshPool
from cockpit_sim.fleet import SimFleet
from tests.ssh.conftest import LOOPBACK
from tests.ssh.test_pool import SILENT, StartTcp, _black_hole, _echo, _pid_alive, _wait_gone

FLEETS = [
    pytest.param("sim_fleet", id="asyncssh"),
    pytest.param("sshd_fleet", id="openssh", marks=pytest.mark.sshd),
]


@pytest.fixture(params=FLEETS)
def fleet(request: pytest.FixtureRequest) -> SimFleet:
    return request.getfixturevalue(request.param)


def endpoints(fleet: SimFleet) -> list[Endpoint]:
    return [Endpoint(n.name, n.host, n.port, fleet.config.user) for n in fleet.nodes]


def fleet_pool(fleet: SimFleet, timeout: float = 3.0, **options: object) -> SshPool:
    settings = Settings(fleet.known_hosts, (fleet.client_key,), timeout)
    return SshPool(endpoints(fleet), settings, **options)  # type: ignore[arg-type]


async def test_run_and_stream_cancel_leave_nothing_on_the_node(fleet: SimFleet) -> None:
    async with fleet_pool(fleet) as pool:
        result = await pool.run("dgx1", ["printf", "%s|", "a b", "$HOME"], timeout=10)
        assert (result.exit_status, result.stdout) == (0, "a b|$HOME|")
        gpu = await pool.run("dgx1", "nvidia-smi --query-gpu=name --format=csv,noheader")
        assert gpu.stdout.strip() == "NVIDIA GB10"
        async with pool.stream("dgx2", 'echo "$BASHPID"; sleep 300 | cat') as stream:
            pid = await anext(stream)
            children = (await pool.run("dgx2", ["pgrep", "-P", pid])).stdout.split()
            assert children and await _pid_alive(pool, "dgx2", pid)
        for gone in [pid, *children]:
            assert await _wait_gone(pool, "dgx2", gone)


async def test_cancelled_reader_kills_a_silent_command(fleet: SimFleet) -> None:
    pids: asyncio.Queue[str] = asyncio.Queue()

    async def read(pool: SshPool) -> None:
        async for line in pool.stream("dgx3", SILENT):
            await pids.put(line)

    async with fleet_pool(fleet) as pool:
        task = asyncio.create_task(read(pool))
        pid = await asyncio.wait_for(pids.get(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await _wait_gone(pool, "dgx3", pid)


async def test_another_nodes_host_key_is_refused(fleet: SimFleet, tmp_path: Path) -> None:
    lines = fleet.known_hosts.read_text().splitlines()
    host1, host2 = fleet.nodes[0].host, fleet.nodes[1].host
    dgx1 = next(line for line in lines if line.startswith(f"[{host1}]"))
    dgx2_key = next(line for line in lines if line.startswith(f"[{host2}]")).split(" ", 1)[1]
    forged = tmp_path / "known_hosts"
    forged.write_text(f"{dgx1.split(' ', 1)[0]} {dgx2_key}\n")
    settings = Settings(forged, (fleet.client_key,), 3.0)
    async with SshPool(endpoints(fleet)[:1], settings) as pool:
        with pytest.raises(HostKeyRejected) as refused:
            await pool.run("dgx1", "true")
    message = str(refused.value)
    assert message.startswith(f"dgx1: host key of {host1} port ") and "CHANGED" in message
    assert f"ssh-keyscan -p {fleet.port} {host1} >> {forged}" in message


@pytest.mark.timing
async def test_hung_node_costs_its_timeout_while_the_fleet_answers(
    fleet: SimFleet, tcp_server: StartTcp
) -> None:
    hung = Endpoint("hung", LOOPBACK, await tcp_server(_black_hole), "root")
    settings = Settings(fleet.known_hosts, (fleet.client_key,), 3.0)
    async with SshPool([*endpoints(fleet)[:3], hung], settings) as pool:
        started = time.monotonic()
        seen = [
            (node, time.monotonic() - started, out)
            async for node, out in pool.run_each(["hung", "dgx1", "dgx2", "dgx3"], "echo ok")
        ]
    assert {node for node, _, _ in seen[:3]} == {"dgx1", "dgx2", "dgx3"}
    assert all(getattr(out, "stdout", None) == "ok\n" for _, _, out in seen[:3])
    node, elapsed, err = seen[3]
    assert node == "hung" and isinstance(err, NodeUnreachable) and "within 3 s" in str(err)
    assert 2.9 < elapsed < 4.0


@pytest.mark.sshd
async def test_forward_reaches_a_port_seen_from_the_node(
    sshd_fleet: SimFleet, tcp_server: StartTcp
) -> None:
    port = await tcp_server(_echo)
    async with fleet_pool(sshd_fleet) as pool:
        host, local = await pool.forward("dgx2", LOOPBACK, port)
        reader, writer = await asyncio.open_connection(host, local)
        writer.write(b"engine")
        await writer.drain()
        assert await reader.readexactly(6) == b"ENGINE"
        writer.close()


OPENSSH_STOP = [pytest.mark.sshd]


@pytest.mark.parametrize("server", ["asyncssh", pytest.param("openssh", marks=OPENSSH_STOP)])
async def test_node_down_then_back(server: str, fleet_factory: Callable[..., SimFleet]) -> None:
    fleet = fleet_factory(2, server=server)
    async with fleet_pool(fleet, 2.0, backoff=Backoff(base=0.2, cap=0.5)) as pool:
        assert (await pool.run("dgx2", "true")).ok
        fleet.stop_node("dgx2")
        started = time.monotonic()
        with pytest.raises(NodeUnreachable):
            while time.monotonic() - started < 3.0:  # the drop may be noticed a command later
                await pool.run("dgx2", "true", timeout=2)
                await asyncio.sleep(0.05)
        assert pool.state("dgx2").link is Link.UNREACHABLE
        assert (await pool.run("dgx1", "echo alive")).stdout == "alive\n"
        fleet.start_node("dgx2")
        for _ in range(40):
            try:
                assert (await pool.run("dgx2", "echo back")).stdout == "back\n"
                break
            except NodeUnreachable:
                await asyncio.sleep(0.1)
        assert pool.state("dgx2").link is Link.CONNECTED
