"""The SSH backend against loopback asyncssh servers running a real bash."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from cockpit.ssh import (
    Backoff,
    CommandTimeout,
    Endpoint,
    HostKeyRejected,
    Link,
    NodeUnreachable,
    Result,
    SshPool,
)
from tests.ssh.conftest import LOOPBACK, Handler, Lab

StartTcp = Callable[[Handler], Coroutine[Any, Any, int]]


async def _black_hole(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Accepts the TCP connection, never says a word: what a hung node looks like."""
    await reader.read()


async def _echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(1024):
        writer.write(data.upper())
        await writer.drain()
    writer.close()


async def test_run_argv_is_quoted_and_str_is_shell(lab: Lab) -> None:
    sshd = await lab.server()
    lab.trust(sshd)
    async with SshPool([lab.endpoint("n1", sshd)], lab.settings()) as pool:
        argv = await pool.run("n1", ["printf", "%s|", "a b", "$HOME", "it's"], timeout=5)
        shell = await pool.run("n1", "echo $((6*7)); echo err >&2; exit 3", timeout=5)
        fed = await pool.run("n1", ["wc", "-l"], timeout=5, input="x\ny\n")
    assert argv == Result(0, "a b|$HOME|it's|", "")
    assert (shell.exit_status, shell.stdout, shell.stderr) == (3, "42\n", "err\n")
    assert fed.stdout.strip() == "2"


async def test_one_connection_per_node_opened_once_for_concurrent_callers(lab: Lab) -> None:
    sshd = await lab.server()
    lab.trust(sshd)
    async with SshPool([lab.endpoint("n1", sshd)], lab.settings()) as pool:
        results = await asyncio.gather(*(pool.run("n1", "echo hi", timeout=5) for _ in range(8)))
        assert pool.state("n1").link is Link.CONNECTED
    assert {r.stdout for r in results} == {"hi\n"}
    assert len(sshd.conns) == 1


async def test_run_timeout_stops_the_command(lab: Lab) -> None:
    sshd = await lab.server()
    lab.trust(sshd)
    async with SshPool([lab.endpoint("n1", sshd)], lab.settings()) as pool:
        started = time.monotonic()
        with pytest.raises(CommandTimeout, match=r"n1: 'sleep 30' still running after 0\.3 s"):
            await pool.run("n1", "sleep 30", timeout=0.3)
        assert time.monotonic() - started < 2
        assert (await pool.run("n1", "echo still usable", timeout=5)).ok


async def _pid_alive(pool: SshPool, node: str, pid: str) -> bool:
    """Running on the node; a zombie left to a slow-reaping init counts as gone."""
    probe = f"kill -0 {int(pid)} && ! grep -qs '^State:[[:space:]]*Z' /proc/{int(pid)}/status"
    return (await pool.run(node, probe, timeout=5)).ok


async def _wait_gone(pool: SshPool, node: str, pid: str, within: float = 6.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not await _pid_alive(pool, node, pid):
            return True
        await asyncio.sleep(0.05)
    return False


SILENT = 'echo "$BASHPID"; exec sleep 300'  # prints its pid, then never writes again


async def test_stream_lines_and_clean_end(lab: Lab) -> None:
    sshd = await lab.server()
    lab.trust(sshd)
    async with SshPool([lab.endpoint("n1", sshd)], lab.settings()) as pool:
        stream = pool.stream("n1", "for i in 1 2 3; do echo line $i; done; exit 4")
        lines = [line async for line in stream]
    assert lines == ["line 1", "line 2", "line 3"]
    assert stream.exit_status == 4


async def test_closing_a_stream_kills_a_silent_remote_command(lab: Lab) -> None:
    sshd = await lab.server()
    lab.trust(sshd)
    async with SshPool([lab.endpoint("n1", sshd)], lab.settings()) as pool:
        async with pool.stream("n1", SILENT) as stream:
            pid = await anext(stream)
            assert await _pid_alive(pool, "n1", pid)
        assert await _wait_gone(pool, "n1", pid)


async def test_cancelling_the_reader_kills_the_remote_pipeline(lab: Lab) -> None:
    sshd = await lab.server()
    lab.trust(sshd)
    pids: asyncio.Queue[str] = asyncio.Queue()

    async def reader(pool: SshPool) -> None:
        cmd = 'echo "$BASHPID"; sleep 300 | cat'
        async for line in pool.stream("n1", cmd):
            await pids.put(line)

    async with SshPool([lab.endpoint("n1", sshd)], lab.settings()) as pool:
        task = asyncio.create_task(reader(pool))
        pid = await asyncio.wait_for(pids.get(), 5)
        children = (await pool.run("n1", ["pgrep", "-P", pid], timeout=5)).stdout.split()
        assert children
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for child in [pid, *children]:
            assert await _wait_gone(pool, "n1", child)


async def test_forward_reaches_a_port_seen_from_the_node(lab: Lab, tcp_server: StartTcp) -> None:
    sshd = await lab.server()
    lab.trust(sshd)
    echo_port = await tcp_server(_echo)
    async with SshPool([lab.endpoint("n1", sshd)], lab.settings()) as pool:
        host, port = await pool.forward("n1", LOOPBACK, echo_port)
        assert await pool.forward("n1", LOOPBACK, echo_port) == (host, port)
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(b"through ssh")
        await writer.drain()
        assert await reader.readexactly(11) == b"THROUGH SSH"
        writer.close()
    assert sshd.forwards == [(LOOPBACK, echo_port)]


async def test_unknown_host_key_is_refused_with_the_command_to_trust_it(lab: Lab) -> None:
    sshd = await lab.server()
    async with SshPool([lab.endpoint("n1", sshd)], lab.settings()) as pool:
        with pytest.raises(HostKeyRejected) as refused:
            await pool.run("n1", "true", timeout=5)
    message = str(refused.value)
    assert message.startswith("n1: host key of 127.0.0.1 port ")
    assert f"ssh-keyscan -p {sshd.port} 127.0.0.1 >> {lab.known_hosts}" in message
    assert sshd.conns and not sshd.forwards


async def test_changed_host_key_is_refused_as_changed(lab: Lab) -> None:
    impostor, real = await lab.server(), await lab.server()
    lab.known_hosts.write_text(real.known_hosts_line().replace(str(real.port), str(impostor.port)))
    async with SshPool([lab.endpoint("n1", impostor)], lab.settings()) as pool:
        with pytest.raises(HostKeyRejected, match="CHANGED") as refused:
            await pool.run("n1", "true", timeout=5)
        assert pool.state("n1").link is Link.UNREACHABLE
    assert f"ssh-keygen -R '[127.0.0.1]:{impostor.port}'" in str(refused.value)


async def test_dead_node_costs_its_timeout_and_never_delays_the_others(
    lab: Lab, tcp_server: StartTcp
) -> None:
    good = await lab.server()
    lab.trust(good)
    hung_port = await tcp_server(_black_hole)
    nodes = [lab.endpoint("good", good), Endpoint("hung", LOOPBACK, hung_port, "tester")]
    async with SshPool(nodes, lab.settings(connect_timeout=1.0)) as pool:
        started = time.monotonic()
        order = []
        async for node, outcome in pool.run_each(["hung", "good"], "echo ok", timeout=5):
            order.append((node, time.monotonic() - started, outcome))
        (first, t_first, ok), (second, t_second, err) = order
        assert (first, ok) == ("good", Result(0, "ok\n", ""))
        assert t_first < 0.8
        assert second == "hung" and isinstance(err, NodeUnreachable)
        assert 0.9 < t_second < 1.6
        assert "no answer from 127.0.0.1" in str(err) and "within 1 s" in str(err)
        state = pool.state("hung")
        assert state.link is Link.UNREACHABLE and state.down_since is not None
        started = time.monotonic()
        with pytest.raises(NodeUnreachable, match="next attempt in"):
            await pool.run("hung", "true")
        assert time.monotonic() - started < 0.1


async def test_reconnects_after_the_node_comes_back(lab: Lab) -> None:
    sshd = await lab.server()
    lab.trust(sshd)
    backoff = Backoff(base=0.2, cap=0.4)
    async with SshPool([lab.endpoint("n1", sshd)], lab.settings(1.0), backoff=backoff) as pool:
        assert (await pool.run("n1", "echo up", timeout=5)).ok
        await sshd.stop()
        await asyncio.sleep(0.1)
        assert pool.state("n1").link is Link.UNREACHABLE
        with pytest.raises(NodeUnreachable, match="connection refused"):
            await pool.run("n1", "true", timeout=5)
        down_since = pool.state("n1").down_since
        await sshd.start()
        await asyncio.sleep(0.25)
        assert (await pool.run("n1", "echo back", timeout=5)).stdout == "back\n"
        assert pool.state("n1").link is Link.CONNECTED
        assert down_since is not None


async def test_retry_now_reaches_a_node_that_came_back_during_its_backoff(lab: Lab) -> None:
    """The TUI's pool outlives outages: after one, a node fails fast until its backoff ends
    (up to the cap); an operation the operator starts asks for an attempt at once."""
    sshd = await lab.server()
    lab.trust(sshd)
    backoff = Backoff(base=30.0, cap=30.0)
    async with SshPool([lab.endpoint("n1", sshd)], lab.settings(1.0), backoff=backoff) as pool:
        assert (await pool.run("n1", "echo up", timeout=5)).ok
        await sshd.stop()
        await asyncio.sleep(0.1)
        with pytest.raises(NodeUnreachable, match="connection refused"):
            await pool.run("n1", "true", timeout=5)
        await sshd.start()
        with pytest.raises(NodeUnreachable, match="next attempt in 30 s"):
            await pool.run("n1", "true", timeout=5)  # back, but its backoff runs
        pool.retry_now()
        assert (await pool.run("n1", "echo back", timeout=5)).stdout == "back\n"
        assert pool.state("n1").link is Link.CONNECTED


async def test_proxyjump_from_ssh_config(lab: Lab) -> None:
    jump, target = await lab.server(), await lab.server()
    lab.trust(jump, target)
    config = lab.dir / "ssh_config"
    config.write_text(
        f"Host jumpbox\n  HostName {LOOPBACK}\n  Port {jump.port}\n  User tester\n"
        f"  IdentityFile {lab.key_path}\n  UserKnownHostsFile {lab.known_hosts}\n"
        f"Host behind\n  HostName {LOOPBACK}\n  Port {target.port}\n  User tester\n"
        "  ProxyJump jumpbox\n"
    )
    node = Endpoint("n1", "behind")
    async with SshPool([node], lab.settings(), config=[config]) as pool:
        assert (await pool.run("n1", "echo via jump", timeout=5)).stdout == "via jump\n"
    assert jump.forwards == [(LOOPBACK, target.port)]


async def test_a_one_shot_pool_announces_no_next_attempt(lab: Lab) -> None:
    """A command's pool makes no next attempt: its refusal says why, not "(next attempt in 1 s)"."""
    sshd = await lab.server()
    lab.trust(sshd)
    await sshd.stop()
    backoff = Backoff(base=30.0, cap=30.0)
    nodes = [lab.endpoint("n1", sshd)]
    async with SshPool(nodes, lab.settings(1.0), backoff=backoff, one_shot=True) as pool:
        with pytest.raises(NodeUnreachable, match="connection refused"):
            await pool.run("n1", "true", timeout=5)
        with pytest.raises(NodeUnreachable) as again:
            await pool.run("n1", "true", timeout=5)  # within its backoff: the same failure
        assert "connection refused" in str(again.value) and "next attempt" not in str(again.value)
