"""One SSH connection per node: opened lazily and concurrently, kept alive, reconnected with
capped exponential backoff. Moves bytes and lines only; it knows nothing of what runs remotely."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import socket
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import asyncssh

from cockpit.backoff import Backoff
from cockpit.ssh.address import NodeAddress, Settings, SshOptions
from cockpit.ssh.errors import (
    ChannelError,
    CommandTimeout,
    HostKeyRejected,
    NodeUnreachable,
    SshError,
)
from cockpit.ssh.hostkeys import has_recorded_key, known_hosts_path, refusal_message
from cockpit.ssh.state import Link, NodeState
from cockpit.ssh.stream import LineStream

Command = str | Sequence[str]
"""An argv list (joined with shlex.join) or a string taken as an already-quoted shell command."""

LOCALHOST = "127.0.0.1"


def to_shell(command: Command) -> str:
    """The shell command line for `command`."""
    return command if isinstance(command, str) else shlex.join(command)


def _brief(command: str, limit: int = 60) -> str:
    return command if len(command) <= limit else command[: limit - 1] + "…"


@dataclass(frozen=True)
class Result:
    """A finished remote command; exit_status < 0 means killed by that signal."""

    exit_status: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.exit_status == 0


class _LinkWatcher(asyncssh.SSHClient):
    """Tells the pool when a connection drops (keepalive timeout, node gone)."""

    def __init__(self, pool: SshPool, node: str) -> None:
        self._pool = pool
        self._node = node
        self._conn: asyncssh.SSHClientConnection | None = None

    def connection_made(self, conn: asyncssh.SSHClientConnection) -> None:
        self._conn = conn

    def connection_lost(self, exc: Exception | None) -> None:
        if self._conn is not None:
            self._pool._lost(self._node, self._conn, exc)


class SshPool:
    """The fleet's SSH connections, one per node, addressed by node name.

    `config` lists OpenSSH client config files (None: ~/.ssh/config when readable), which gives
    ProxyJump, aliases and per-host options; the agent is used when SSH_AUTH_SOCK is set.
    A node that does not answer costs at most `settings.connect_timeout`, then fails fast
    until its backoff delay has passed. `one_shot`: the pool of one command, which makes no
    next attempt, so its fast failures do not announce one.
    """

    def __init__(
        self,
        nodes: Iterable[NodeAddress],
        settings: SshOptions | None = None,
        *,
        config: Sequence[Path | str] | None = None,
        keepalive_interval: float = 5.0,
        keepalive_count_max: int = 3,
        backoff: Backoff | None = None,
        one_shot: bool = False,
    ) -> None:
        self._nodes: dict[str, NodeAddress] = {n.name: n for n in nodes}
        self._one_shot = one_shot
        self._settings = settings or Settings()
        self._config = config
        self._keepalive = (keepalive_interval, keepalive_count_max)
        self._backoff = backoff or Backoff()
        self._conns: dict[str, asyncssh.SSHClientConnection] = {}
        self._pending: dict[str, asyncio.Task[asyncssh.SSHClientConnection]] = {}
        self._states: dict[str, NodeState] = {name: NodeState() for name in self._nodes}
        self._errors: dict[str, NodeUnreachable] = {}
        self._forwards: dict[
            tuple[str, str, int], tuple[asyncssh.SSHClientConnection, asyncssh.SSHListener]
        ] = {}
        self._known: tuple[Path, int, asyncssh.SSHKnownHosts] | None = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def nodes(self) -> list[str]:
        return list(self._nodes)

    def state(self, node: str) -> NodeState:
        return self._states[self._address(node).name]

    def states(self) -> dict[str, NodeState]:
        return dict(self._states)

    # -- connections -------------------------------------------------------------------------

    async def connection(self, node: str) -> asyncssh.SSHClientConnection:
        """The node's open connection, opening it (once, shared by concurrent callers) if needed."""
        address = self._address(node)
        conn = self._conns.get(node)
        if conn is not None:
            return conn
        task = self._pending.get(node)
        if task is None:
            state = self._states[node]
            wait = state.retry_at - time.monotonic()
            if state.link is Link.UNREACHABLE and wait > 0 and node in self._errors:
                last = self._errors[node]
                later = "" if self._one_shot else f" (next attempt in {wait:.0f} s)"
                raise type(last)(node, last.reason + later)
            task = asyncio.create_task(self._open(address))
            self._pending[node] = task
        return await asyncio.shield(task)

    async def _open(self, address: NodeAddress) -> asyncssh.SSHClientConnection:
        node = address.name
        self._states[node] = self._states[node].connecting()
        timeout = self._settings.connect_timeout
        try:
            async with asyncio.timeout(timeout):
                conn = await asyncssh.connect(
                    address.host,
                    address.port or (),
                    username=address.user or (),
                    known_hosts=self._known_hosts(),
                    client_keys=[str(Path(p).expanduser()) for p in ids]
                    if (ids := self._settings.identity_files)
                    else (),
                    config=[str(p) for p in self._config] if self._config is not None else (),
                    keepalive_interval=self._keepalive[0],
                    keepalive_count_max=self._keepalive[1],
                    client_factory=lambda: _LinkWatcher(self, node),
                )
        except asyncio.CancelledError:
            self._states[node] = NodeState()
            raise
        except Exception as exc:
            error = self._explain(address, exc, timeout)
            self._errors[node] = error
            self._states[node] = self._states[node].failed(
                time.time(), time.monotonic(), error.reason, self._backoff
            )
            raise error from exc
        finally:
            self._pending.pop(node, None)
        self._conns[node] = conn
        self._errors.pop(node, None)
        self._states[node] = self._states[node].connected()
        return conn

    def _known_hosts(self) -> asyncssh.SSHKnownHosts | tuple[()]:
        """The configured known_hosts, parsed once per version of the file (asyncssh would
        parse the whole file again for every connection: quadratic in the fleet's size)."""
        if not self._settings.known_hosts:
            return ()  # asyncssh's default, ~/.ssh/known_hosts
        path = Path(self._settings.known_hosts).expanduser()
        mtime = path.stat().st_mtime_ns
        if self._known is None or self._known[:2] != (path, mtime):
            self._known = (path, mtime, asyncssh.read_known_hosts(str(path)))
        return self._known[2]

    def _explain(self, address: NodeAddress, exc: Exception, timeout: float) -> NodeUnreachable:
        node, where = address.name, f"{address.host}:{address.port or 22}"
        if isinstance(exc, TimeoutError):
            return NodeUnreachable(node, f"no answer from {where} within {timeout:g} s")
        if isinstance(exc, asyncssh.HostKeyNotVerifiable):
            known = known_hosts_path(self._settings.known_hosts)
            changed = has_recorded_key(known, address.host, address.port)
            return HostKeyRejected(
                node, refusal_message(address.host, address.port, known, changed)
            )
        if isinstance(exc, asyncssh.PermissionDenied):
            user = address.user or "the default user"
            return NodeUnreachable(node, f"{where}: authentication refused for {user}")
        if isinstance(exc, socket.gaierror):
            return NodeUnreachable(node, f"cannot resolve {address.host}: {exc.strerror}")
        if isinstance(exc, OSError):
            why = os.strerror(exc.errno).lower() if exc.errno else str(exc)
            return NodeUnreachable(node, f"{where}: {why}")
        if isinstance(exc, asyncssh.DisconnectError):
            return NodeUnreachable(node, f"{where}: {exc.reason}")
        return NodeUnreachable(node, f"{where}: {exc}")

    def _lost(self, node: str, conn: asyncssh.SSHClientConnection, exc: Exception | None) -> None:
        if self._conns.get(node) is not conn:
            return  # closed on purpose, or already replaced
        del self._conns[node]
        for key in [k for k in self._forwards if k[0] == node]:
            self._forwards.pop(key)[1].close()
        reason = str(exc) if exc else "connection closed by the node"
        self._states[node] = self._states[node].lost(time.time(), reason)

    def _address(self, node: str) -> NodeAddress:
        try:
            return self._nodes[node]
        except KeyError:
            known = ", ".join(self._nodes)
            raise SshError(node, f"not in the inventory (known: {known})") from None

    def retry_now(self, nodes: Iterable[str] | None = None) -> None:
        """The next use of these nodes (default: all) connects at once, whatever their backoff:
        an operation the operator starts must find a node that came back. The backoff spares
        a dead node the background polls of a long-lived pool (the TUI's), which would
        otherwise fail fast for up to its cap after the node returned."""
        for name in nodes if nodes is not None else list(self._nodes):
            node = self._address(name).name
            if self._states[node].link is Link.UNREACHABLE:
                self._states[node] = self._states[node].retry_now()

    # -- commands ---------------------------------------------------------------------------

    async def run(
        self, node: str, command: Command, timeout: float = 30.0, input: str | None = None
    ) -> Result:
        """Run a command to completion. Costs at most connect_timeout + timeout; on timeout the
        remote command is signalled (TERM), its channel closed, and CommandTimeout raised."""
        line = to_shell(command)
        # stdin gets EOF after `input` (like `ssh -n`): nothing waits on the cockpit's stdin
        proc = await self.process(node, line, input=input or "")
        try:
            async with asyncio.timeout(timeout):
                done = await proc.wait(check=False)
        except TimeoutError:
            _abort(proc)
            raise CommandTimeout(
                node, f"{_brief(line)!r} still running after {timeout:g} s: stopped"
            ) from None
        except asyncio.CancelledError:
            _abort(proc)
            raise
        except (asyncssh.Error, OSError) as exc:
            raise ChannelError(node, f"{_brief(line)!r} broken: {exc}") from exc
        if done.returncode is None:
            raise ChannelError(node, f"link lost while running {_brief(line)!r}")
        return Result(done.returncode, str(done.stdout or ""), str(done.stderr or ""))

    async def process(self, node: str, line: str, **options: Any) -> asyncssh.SSHClientProcess[str]:
        """A remote process on the node's connection (text mode)."""
        return await self._create(node, line, encoding="utf-8", errors="replace", **options)

    async def binary_process(self, node: str, line: str) -> asyncssh.SSHClientProcess[bytes]:
        """A remote process whose stdin and stdout carry bytes (a tar stream, say)."""
        return await self._create(node, line, encoding=None)

    async def _create(self, node: str, line: str, **options: Any) -> Any:
        """Start `line` on the node's connection. A connection found dead on the way (the node
        dropped it before we noticed) is replaced once, transparently."""
        retried = False
        while True:
            conn = await self.connection(node)
            try:
                return await conn.create_process(line, **options)
            except (asyncssh.Error, OSError) as exc:
                if not retried and conn.is_closed():
                    retried = True
                    self._lost(node, conn, exc)
                    continue
                raise ChannelError(node, f"cannot start {_brief(line)!r}: {exc}") from exc

    async def run_each(
        self,
        nodes: Iterable[str],
        command: Command,
        timeout: float = 30.0,
        input: str | None = None,
    ) -> AsyncIterator[tuple[str, Result | SshError]]:
        """Run on every node concurrently, yielding each node's outcome as soon as it is known."""

        async def one(node: str) -> tuple[str, Result | SshError]:
            try:
                return node, await self.run(node, command, timeout, input)
            except SshError as exc:
                return node, exc

        tasks = [asyncio.create_task(one(n)) for n in nodes]
        try:
            for next_done in asyncio.as_completed(tasks):
                yield await next_done
        finally:
            for task in tasks:
                task.cancel()

    async def run_all(
        self,
        nodes: Iterable[str],
        command: Command,
        timeout: float = 30.0,
        input: str | None = None,
    ) -> dict[str, Result | SshError]:
        """`run` on every node concurrently: a dead node costs its own timeout and nothing more."""
        return {node: out async for node, out in self.run_each(nodes, command, timeout, input)}

    def stream(self, node: str, command: Command) -> LineStream:
        """Lines of a long-running command; stopping the iteration kills it on the node."""
        self._address(node)
        return LineStream(self, node, to_shell(command))

    async def forward(self, node: str, remote_host: str, remote_port: int) -> tuple[str, int]:
        """A local (127.0.0.1, port) that reaches remote_host:remote_port as seen from the node.
        One listener per target, reused while the node's connection lives."""
        key = (node, remote_host, remote_port)
        conn = await self.connection(node)
        cached = self._forwards.get(key)
        if cached is not None and cached[0] is conn:
            return LOCALHOST, cached[1].get_port()
        try:
            listener = await conn.forward_local_port(LOCALHOST, 0, remote_host, remote_port)
        except (asyncssh.Error, OSError) as exc:
            target = f"{remote_host}:{remote_port}"
            raise ChannelError(node, f"cannot forward to {target}: {exc}") from exc
        self._forwards[key] = (conn, listener)
        return LOCALHOST, listener.get_port()

    async def close(self) -> None:
        """Close every forward and connection; the pool can be used again afterwards."""
        pending = list(self._pending.values())
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        for _, listener in self._forwards.values():
            listener.close()
        self._forwards.clear()
        conns, self._conns = self._conns, {}
        for conn in conns.values():
            conn.close()
        for conn in conns.values():
            with contextlib.suppress(Exception):
                await conn.wait_closed()
        self._errors.clear()
        self._states = {name: NodeState() for name in self._nodes}


def _abort(proc: asyncssh.SSHClientProcess[str]) -> None:
    with contextlib.suppress(asyncssh.Error, OSError):
        proc.send_signal("TERM")
    proc.close()
