"""A long-running remote command read line by line, stopped on the node when the reader stops.

Closing an SSH channel alone does not kill a remote command that does not write (OpenSSH sends no
SIGHUP without a pty), so every streamed command runs under a small bash supervisor: the command
gets its own process group, and the group is killed when the channel's stdin reaches EOF (the
cockpit closed the channel or vanished) or when the session receives TERM/HUP/INT. The supervisor
reaps what it killed, so no zombie is left to an init that may not reap.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
from collections import deque
from types import TracebackType
from typing import TYPE_CHECKING, Self

import asyncssh

from cockpit.ssh.errors import ChannelError

if TYPE_CHECKING:
    from cockpit.ssh.pool import SshPool

_SUPERVISOR = """\
set -m
trap 'for j in $(jobs -p); do kill -TERM -- "-$j"; done 2>/dev/null; wait; exit 143' \
  TERM HUP INT PIPE
exec 4<> <(:)
bash -c "$1" <&4 4<&- &
child=$!
{ while read -r l; do printf '%s\n' "$l" >&4; done; kill -TERM -- -$child; } >/dev/null 2>&1 &
watchdog=$!
wait "$child"
status=$?
kill -- -$watchdog 2>/dev/null
wait
exit "$status"
"""
"""The trap is set before anything starts, and kills every job's process group (`jobs -p`), so a
signal arriving while the jobs are still being started leaves nothing behind. Lines written to the
channel reach the command's stdin (a pipe that never reaches EOF: `poke`); its EOF is the kill."""

STDERR_TAIL_LINES = 20


def supervised(command: str) -> str:
    """The remote command line that runs `command` under the kill-on-close supervisor."""
    return shlex.join(["exec", "bash", "-c", _SUPERVISOR, "cockpit-stream", command])


class LineStream:
    """Async iterator of a remote command's stdout lines (without the newline).

    Ends when the command exits; `aclose()`, leaving `async with`, or cancelling the reading
    task stops the remote command. The last stderr lines are kept in `stderr_tail`.
    """

    def __init__(self, pool: SshPool, node: str, command: str) -> None:
        self.node = node
        self.command = command
        self._pool = pool
        self._proc: asyncssh.SSHClientProcess[str] | None = None
        self._drain: asyncio.Task[None] | None = None
        self._closed = False
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __aiter__(self) -> Self:
        return self

    @property
    def exit_status(self) -> int | None:
        """The command's exit status (negative: killed by that signal); None while running
        or when the link dropped before the node reported it."""
        return None if self._proc is None else self._proc.returncode

    async def start(self) -> None:
        """Open the channel now (iterating opens it lazily otherwise)."""
        if self._proc is not None or self._closed:
            return
        self._proc = await self._pool.process(self.node, supervised(self.command))
        self._drain = asyncio.create_task(self._keep_stderr_tail(self._proc))

    async def __anext__(self) -> str:
        if self._closed:
            raise StopAsyncIteration
        await self.start()
        assert self._proc is not None
        try:
            line = await self._proc.stdout.readline()
        except asyncio.CancelledError:
            self._stop()
            raise
        except (asyncssh.Error, OSError) as exc:
            self._stop()
            raise ChannelError(self.node, f"stream broken: {exc}") from exc
        if not line:
            self._stop()
            raise StopAsyncIteration
        return line.rstrip("\r\n")

    def poke(self, text: str = "") -> None:
        """Write a line to the command's stdin (the probe takes it as "look again now", and
        echoes `text`, the ask's number); nothing when the stream is not open."""
        proc = self._proc
        if proc is None or self._closed or proc.returncode is not None:
            return
        with contextlib.suppress(asyncssh.Error, OSError):  # a channel closing meanwhile
            proc.stdin.write(f"{text}\n")

    async def aclose(self) -> None:
        """Stop the remote command and wait (briefly) for the channel to close."""
        self._stop()
        if self._proc is None:
            return
        try:
            async with asyncio.timeout(2.0):
                await self._proc.wait_closed()
                if self._drain is not None:
                    await self._drain
        except (TimeoutError, asyncssh.Error, OSError):
            if self._drain is not None:
                self._drain.cancel()

    def _stop(self) -> None:
        if self._closed:
            return
        self._closed = True
        proc = self._proc
        if proc is None:
            return
        if proc.returncode is None:
            with contextlib.suppress(asyncssh.Error, OSError):
                proc.send_signal("TERM")
                proc.stdin.write_eof()
        proc.close()

    async def _keep_stderr_tail(self, proc: asyncssh.SSHClientProcess[str]) -> None:
        with contextlib.suppress(asyncssh.Error, OSError):
            async for line in proc.stderr:
                self.stderr_tail.append(line.rstrip("\r\n"))
