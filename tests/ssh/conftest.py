"""A minimal asyncssh server on loopback that runs commands with a real bash, for the backend tests.

Each server has its own host key; clients authenticate with a per-test key; port forwarding is
allowed to loopback only. Everything started here is stopped in the fixture teardown.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import signal
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncssh
import pytest

from cockpit.ssh import Endpoint, Settings

LOOPBACK = "127.0.0.1"
USER = "tester"


class _Server(asyncssh.SSHServer):
    def __init__(self, sshd: MiniSshd) -> None:
        self._sshd = sshd

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        self._sshd.conns.append(conn)

    def connection_requested(
        self, dest_host: str, dest_port: int, orig_host: str, orig_port: int
    ) -> bool:
        self._sshd.forwards.append((dest_host, dest_port))
        return dest_host.startswith("127.")


async def _pump_out(source: asyncio.StreamReader, sink: asyncssh.SSHWriter[bytes]) -> None:
    while data := await source.read(65536):
        sink.write(data)
        await sink.drain()


async def _pump_in(source: asyncssh.SSHReader[bytes], proc: asyncio.subprocess.Process) -> None:
    """Channel → command stdin; a channel signal is delivered like OpenSSH does; EOF or a
    closed channel reaches the command as EOF on its stdin."""
    assert proc.stdin is not None
    try:
        while True:
            try:
                data = await source.read(65536)
            except asyncssh.SignalReceived as received:
                with contextlib.suppress(ProcessLookupError, AttributeError):
                    proc.send_signal(getattr(signal, f"SIG{received.signal}"))
                continue
            if not data:
                break
            proc.stdin.write(data)
            await proc.stdin.drain()
    except (asyncssh.Error, OSError):
        pass
    finally:
        proc.stdin.close()


async def _bash(sshd: MiniSshd, process: asyncssh.SSHServerProcess[bytes]) -> None:
    """Run the requested command with bash, its stdio pumped to and from the channel."""
    proc = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        process.command or "",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,  # as sshd's session: the probe lowers its own autogroup, not ours
    )
    sshd.procs.append(proc)
    assert proc.stdout and proc.stderr
    feeder = asyncio.create_task(_pump_in(process.stdin, proc))
    try:
        await asyncio.gather(
            _pump_out(proc.stdout, process.stdout), _pump_out(proc.stderr, process.stderr)
        )
        code = await proc.wait()
        process.exit(code)
    except (asyncssh.Error, OSError, BrokenPipeError):
        process.close()
    finally:
        feeder.cancel()


@dataclass
class MiniSshd:
    """One loopback SSH endpoint; `stop()`/`start()` simulate a node going away and back."""

    host_key: asyncssh.SSHKey
    client_key: asyncssh.SSHKey
    port: int = 0
    forwards: list[tuple[str, int]] = field(default_factory=list)
    conns: list[asyncssh.SSHServerConnection] = field(default_factory=list)
    procs: list[asyncio.subprocess.Process] = field(default_factory=list)
    _acceptor: asyncssh.SSHAcceptor | None = None

    async def start(self) -> None:
        self._acceptor = await asyncssh.listen(
            LOOPBACK,
            self.port,
            server_host_keys=[self.host_key],
            authorized_client_keys=asyncssh.import_authorized_keys(
                self.client_key.export_public_key().decode()
            ),
            server_factory=lambda: _Server(self),
            process_factory=functools.partial(_bash, self),
            encoding=None,
            reuse_address=True,
        )
        self.port = self._acceptor.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._acceptor is not None:
            self._acceptor.close()
            await self._acceptor.wait_closed()
            self._acceptor = None
        for conn in self.conns:
            conn.close()
        for conn in self.conns:
            await conn.wait_closed()
        self.conns.clear()

    async def kill_leftovers(self) -> None:
        """Teardown safety net: no command a test started outlives it."""
        for proc in self.procs:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()

    def known_hosts_line(self) -> str:
        return f"[{LOOPBACK}]:{self.port} {self.host_key.export_public_key().decode()}"


@dataclass
class Lab:
    """Servers plus the client-side files (key, known_hosts) to reach them."""

    dir: Path
    client_key: asyncssh.SSHKey
    servers: list[MiniSshd] = field(default_factory=list)

    @property
    def key_path(self) -> Path:
        return self.dir / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.dir / "known_hosts"

    async def server(self) -> MiniSshd:
        sshd = MiniSshd(asyncssh.generate_private_key("ssh-ed25519"), self.client_key)
        await sshd.start()
        self.servers.append(sshd)
        return sshd

    def trust(self, *servers: MiniSshd) -> None:
        with self.known_hosts.open("a") as out:
            for sshd in servers:
                out.write(sshd.known_hosts_line())

    def endpoint(self, name: str, sshd: MiniSshd) -> Endpoint:
        return Endpoint(name, LOOPBACK, sshd.port, USER)

    def settings(self, connect_timeout: float = 3.0) -> Settings:
        return Settings(self.known_hosts, (self.key_path,), connect_timeout)


@pytest.fixture
async def lab(tmp_path: Path) -> AsyncIterator[Lab]:
    key = asyncssh.generate_private_key("ssh-ed25519")
    lab = Lab(tmp_path, key)
    key.write_private_key(lab.key_path)
    lab.known_hosts.touch()
    yield lab
    for sshd in lab.servers:
        await sshd.stop()
        await sshd.kill_leftovers()


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Coroutine[Any, Any, None]]


@pytest.fixture
async def tcp_server() -> AsyncIterator[Callable[[Handler], Coroutine[Any, Any, int]]]:
    """Start plain TCP servers on loopback (echo, black hole); returns their port."""
    servers: list[asyncio.Server] = []
    writers: list[asyncio.StreamWriter] = []

    async def start(handler: Handler) -> int:
        async def tracked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writers.append(writer)
            await handler(reader, writer)

        server = await asyncio.start_server(tracked, LOOPBACK, 0)
        servers.append(server)
        return server.sockets[0].getsockname()[1]

    yield start
    for writer in writers:
        writer.close()
    for server in servers:
        server.close()
        await server.wait_closed()
