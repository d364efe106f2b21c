"""Bytes from a command on one node into a command on another, through the cockpit's connections.

Nodes need no SSH trust between them: the cockpit reads the producer's stdout and writes it to
the consumer's stdin, chunk by chunk, with the consumer's flow control (`drain`) pacing the
producer. A pipe stopped before the producer's end (the reader left, a link broke) kills the
producer and gives the consumer EOF on a cut stream, then a short grace to exit: a consumer that
checks what it received can clean up after itself instead of dying mid-write.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import asyncssh

from cockpit.ssh.errors import ChannelError

if TYPE_CHECKING:
    from cockpit.ssh.pool import SshPool

CHUNK = 1 << 18
STOP_GRACE_S = 10.0
STDERR_KEPT = 4096


@dataclass(frozen=True)
class PipeEnd:
    """How both ends finished (status None: killed, or the link dropped before it said)."""

    moved: int
    source_status: int | None
    sink_status: int | None
    source_stderr: str
    sink_stderr: str

    @property
    def ok(self) -> bool:
        return self.source_status == 0 and self.sink_status == 0


class BytePipe:
    """`async for moved in pipe.run()`: bytes moved so far after each chunk; `end` once done."""

    def __init__(self, pool: SshPool, source: str, produce: str, sink: str, consume: str) -> None:
        self.source, self.sink = source, sink
        self._pool = pool
        self._produce, self._consume = produce, consume
        self.end: PipeEnd | None = None

    async def run(self) -> AsyncIterator[int]:
        src = await self._pool.binary_process(self.source, self._produce)
        try:
            dst = await self._pool.binary_process(self.sink, self._consume)
        except BaseException:
            _kill(src)
            raise
        src.stdin.write_eof()
        tails = [asyncio.create_task(_tail(p)) for p in (src, dst)]
        moved, complete = 0, False
        try:
            while chunk := await src.stdout.read(CHUNK):
                dst.stdin.write(chunk)
                await dst.stdin.drain()
                moved += len(chunk)
                yield moved
            dst.stdin.write_eof()
            await src.wait(check=False)
            await dst.wait(check=False)
            complete = True
        except (asyncssh.Error, OSError) as exc:
            raise ChannelError(self.sink, f"pipe from {self.source} broken: {exc}") from exc
        finally:
            if not complete:
                await asyncio.shield(_stop(src, dst))
            source_err, sink_err = await asyncio.shield(_gather(tails))
            self.end = PipeEnd(moved, src.returncode, dst.returncode, source_err, sink_err)


async def _tail(proc: asyncssh.SSHClientProcess[bytes]) -> str:
    """The end of what the process wrote on stderr (bounded)."""
    kept = b""
    with contextlib.suppress(asyncssh.Error, OSError):
        while chunk := await proc.stderr.read(CHUNK):
            kept = (kept + chunk)[-STDERR_KEPT:]
    return kept.decode("utf-8", "replace").strip()


async def _gather(tails: list[asyncio.Task[str]]) -> tuple[str, str]:
    try:
        async with asyncio.timeout(STOP_GRACE_S):
            source, sink = await asyncio.gather(*tails)
    except TimeoutError:
        for task in tails:
            task.cancel()
        return "", ""
    return source, sink


def _kill(proc: asyncssh.SSHClientProcess[bytes]) -> None:
    with contextlib.suppress(asyncssh.Error, OSError):
        proc.send_signal("TERM")
    proc.close()


async def _stop(
    src: asyncssh.SSHClientProcess[bytes], dst: asyncssh.SSHClientProcess[bytes]
) -> None:
    """Kill the producer; the consumer gets EOF on a cut stream and a grace to exit by itself."""
    _kill(src)
    with contextlib.suppress(asyncssh.Error, OSError):
        dst.stdin.write_eof()
    with contextlib.suppress(TimeoutError, asyncssh.Error, OSError):
        async with asyncio.timeout(STOP_GRACE_S):
            await dst.wait(check=False)
    dst.close()
