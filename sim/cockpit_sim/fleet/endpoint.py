"""A simulated node's SSH endpoint on asyncssh: every exec runs in a real bash with the node's env.

Bytes stream both ways with flow control (binary-safe: `docker save | ssh peer docker load`), the
exit status or signal propagates, and when the client closes the channel, drops the connection or
sends a signal, the command's process group gets it: nothing outlives its session.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import signal
from pathlib import Path

import asyncssh

from cockpit_sim.tools.nodens import session_argv

STDIN_HIGH_WATER = 1 << 20
KILL_GRACE_S = 1.0


def _kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


class NodeSession(asyncssh.SSHServerSession):  # type: ignore[type-arg]
    """One channel: `bash -c COMMAND` (or `bash -l` for a shell) in its own session, inside the
    node's namespaces (`cockpit_sim.tools.nodens`)."""

    def __init__(self, env: dict[str, str], cwd: str) -> None:
        self._env = env
        self._cwd = cwd
        self._chan: asyncssh.SSHServerChannel[bytes] | None = None
        self._argv = ["bash", "-l"]
        self._proc: asyncio.subprocess.Process | None = None
        self._pending: list[bytes] = []
        self._eof = False
        self._writable = asyncio.Event()
        self._writable.set()
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def connection_made(self, chan: asyncssh.SSHServerChannel[bytes]) -> None:
        self._chan = chan

    def shell_requested(self) -> bool:
        return True

    def exec_requested(self, command: str) -> bool:
        self._argv = ["bash", "-c", command]
        return True

    def session_started(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        assert self._chan is not None
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *session_argv(self._env["COCKPIT_SIM_NODE_DIR"], self._argv, self._cwd),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self._env,
                cwd=self._cwd,
                start_new_session=True,
                limit=1 << 16,
            )
        except OSError as exc:
            self._chan.write_stderr(f"bash: {exc}\n".encode())
            self._chan.exit(127)
            return
        if self._closed:
            self._terminate()
        for data in self._pending:
            self._feed(data)
        self._pending.clear()
        if self._eof:
            self._close_stdin()
        assert self._proc.stdout is not None and self._proc.stderr is not None
        await asyncio.gather(
            self._pump(self._proc.stdout, self._chan.write),
            self._pump(self._proc.stderr, self._chan.write_stderr),
        )
        code = await self._proc.wait()
        if self._chan.is_closing():
            return
        if code < 0:
            self._chan.exit_with_signal(signal.Signals(-code).name.removeprefix("SIG"))
        else:
            self._chan.exit(code)

    async def _pump(self, stream: asyncio.StreamReader, write: object) -> None:
        while chunk := await stream.read(1 << 16):
            await self._writable.wait()
            if self._closed:
                continue
            write(chunk)  # type: ignore[operator]

    def _feed(self, data: bytes) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        stdin = self._proc.stdin
        if stdin.is_closing():
            return
        stdin.write(data)
        if stdin.transport.get_write_buffer_size() > STDIN_HIGH_WATER and self._chan:
            self._chan.pause_reading()
            asyncio.get_running_loop().create_task(self._drain(stdin))

    async def _drain(self, stdin: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            await stdin.drain()
        if self._chan is not None and not self._closed:
            self._chan.resume_reading()

    def _close_stdin(self) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        if not self._proc.stdin.is_closing():
            self._proc.stdin.close()

    def data_received(self, data: bytes, datatype: int | None) -> None:
        if self._proc is None:
            self._pending.append(data)
        else:
            self._feed(data)

    def eof_received(self) -> bool:
        self._eof = True
        if self._proc is not None:
            self._close_stdin()
        return True

    def signal_received(self, signal_name: str) -> None:
        sig = getattr(signal, "SIG" + signal_name.upper(), None)
        if self._proc is not None and sig is not None:
            _kill_group(self._proc.pid, sig)

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._writable.set()
        self._terminate()

    def _terminate(self) -> None:
        """SIGHUP the command's group (as a closing terminal would), SIGKILL what stays."""
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        _kill_group(proc.pid, signal.SIGHUP)
        asyncio.get_running_loop().call_later(KILL_GRACE_S, _kill_group, proc.pid, signal.SIGKILL)


class NodeServer(asyncssh.SSHServer):
    """Public-key auth against the fleet's authorized keys; forwarding to loopback only."""

    def __init__(self, endpoint: AsyncsshEndpoint) -> None:
        self._endpoint = endpoint

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        self._endpoint.connections.add(conn)

    def connection_lost(self, exc: Exception | None) -> None:
        self._endpoint.connections = {c for c in self._endpoint.connections if not c.is_closed()}

    def begin_auth(self, username: str) -> bool:
        return True

    def session_requested(self) -> NodeSession:
        return NodeSession(self._endpoint.env, self._endpoint.env["HOME"])

    def connection_requested(
        self, dest_host: str, dest_port: int, orig_host: str, orig_port: int
    ) -> bool:
        try:
            return dest_host == "localhost" or ipaddress.ip_address(dest_host).is_loopback
        except ValueError:
            return False


class AsyncsshEndpoint:
    """The SSH endpoint of one node; `start`/`stop` toggle its reachability."""

    def __init__(
        self, host: str, port: int, host_key: Path, authorized_keys: Path, env: dict[str, str]
    ) -> None:
        self.host = host
        self.port = port
        self._host_key = asyncssh.read_private_key(str(host_key))
        self._authorized = asyncssh.read_authorized_keys(str(authorized_keys))
        self.env = env
        self._server: asyncssh.SSHAcceptor | None = None
        self.connections: set[asyncssh.SSHServerConnection] = set()

    @property
    def running(self) -> bool:
        return self._server is not None

    async def start(self) -> None:
        if self._server is not None:
            return
        self._server = await asyncssh.create_server(
            lambda: NodeServer(self),
            self.host,
            self.port,
            server_host_keys=[self._host_key],
            authorized_client_keys=self._authorized,
            line_editor=False,
            encoding=None,
            allow_scp=False,
            reuse_address=True,
            keepalive_interval=15,
        )

    async def stop(self) -> None:
        """Close the listener and drop every open connection (as a node going down would)."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
            await server.wait_closed()
        for conn in list(self.connections):
            conn.abort()
        self.connections.clear()
