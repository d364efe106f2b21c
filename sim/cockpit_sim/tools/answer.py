"""A quick call answered in the tool service's own process: its output kept in order, then
written to the caller's descriptors without ever waiting on a reader.

A fork per call costs the service ~1 ms, and the child's set-up and its first touches of the
copied pages ~2 more, where a `docker ps` or an `nvidia-smi --query-gpu` itself takes ~0.1 ms of
CPU (benchmarks/status_scale.py). A tool says which of its calls are quick (its module's
`quick(args)`): those run in the service with `sys.stdout`/`sys.stderr` captured here, buffered
as a forked tool's are (stdout by blocks, stderr by lines), so the two streams keep the order a
caller reading both from one pipe (`2>&1`) would see. The service is one thread serving every
node, so delivery must not block: a pipe is written through a descriptor of its own opened
non-blocking (the caller's shares its flags with the caller), a socket with MSG_DONTWAIT; what a
slow reader leaves is written by a child forked for it (`write_rest`).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import socket
import stat
import sys
from collections.abc import Callable, Iterator
from functools import partial

Chunks = list[tuple[int, bytes]]
"""What a call wrote, in the order it reached its descriptors: (1 or 2, bytes)."""


class _Stream(io.RawIOBase):
    """One of the call's two output descriptors, recording its writes into the shared list."""

    def __init__(self, target: int, chunks: Chunks) -> None:
        super().__init__()
        self._target = target
        self._chunks = chunks

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        self._chunks.append((self._target, bytes(data)))
        return len(data)


@contextlib.contextmanager
def captured() -> Iterator[Chunks]:
    """sys.stdin closed and sys.stdout/sys.stderr captured, as a forked tool has them on pipes."""
    chunks: Chunks = []
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin = None  # type: ignore[assignment]
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(_Stream(1, chunks)), encoding="utf-8", errors="surrogateescape"
    )
    sys.stderr = io.TextIOWrapper(
        io.BufferedWriter(_Stream(2, chunks)),
        encoding="utf-8",
        errors="backslashreplace",
        line_buffering=True,
    )
    try:
        yield chunks
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        sys.stdin, sys.stdout, sys.stderr = saved


def plain(fd: int) -> bool:
    """Writable without a terminal or a session: a pipe, a socket, a file or a device that is
    not a terminal (/dev/null). A call writing to a terminal is forked, as it may care."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    if stat.S_ISCHR(mode):
        return not os.isatty(fd)
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISREG(mode)


def _write_some(write: Callable[[memoryview], int], data: memoryview) -> int:
    """As much of `data` as `write` takes before it would wait."""
    done = 0
    while done < len(data):
        try:
            done += write(data[done:])
        except BlockingIOError:
            break
    return done


def _write_now(fd: int, data: bytes) -> int:
    """As much of `data` as `fd` takes without waiting; BrokenPipeError when no one reads."""
    view = memoryview(data)
    mode = os.fstat(fd).st_mode
    if stat.S_ISFIFO(mode):
        try:
            own = os.open(f"/proc/self/fd/{fd}", os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # a pipe with no reader left
                raise BrokenPipeError(errno.EPIPE, "no reader") from exc
            return 0  # no descriptor of its own: a child writes it all, as a tool would
        try:
            return _write_some(partial(os.write, own), view)
        finally:
            os.close(own)
    if stat.S_ISSOCK(mode):
        copy = os.dup(fd)
        try:
            sock = socket.socket(fileno=copy)
        except OSError:
            os.close(copy)
            return 0
        with sock:
            return _write_some(lambda chunk: sock.send(chunk, socket.MSG_DONTWAIT), view)
    return _write_some(partial(os.write, fd), view)  # a file or /dev/null: no reader to wait on


def _merged(chunks: Chunks) -> Chunks:
    """Neighbouring chunks to the same descriptor as one write."""
    merged: Chunks = []
    for target, data in chunks:
        if merged and merged[-1][0] == target:
            merged[-1] = (target, merged[-1][1] + data)
        elif data:
            merged.append((target, data))
    return merged


def deliver(chunks: Chunks, fds: dict[int, int], code: int) -> tuple[int, Chunks]:
    """Write the call's output to its descriptors (`fds`: 1 and 2 → the caller's) as far as they
    take it now: (the call's exit status, what is left for `write_rest`). A reader gone (or any
    other write error) ends the call with status 1, as the tool's own write would have."""
    merged = _merged(chunks)
    for index, (target, data) in enumerate(merged):
        try:
            done = _write_now(fds[target], data)
        except OSError:
            return 1, []
        if done < len(data):
            return code, [(target, data[done:]), *merged[index + 1 :]]
    return code, []


def write_rest(rest: Chunks, code: int) -> int:
    """In a child whose descriptors 1 and 2 are the caller's: the rest of the output, waiting on
    the reader as a forked tool would; the call's exit status."""
    try:
        for target, data in rest:
            view = memoryview(data)
            while view:
                view = view[os.write(target, view) :]
    except OSError:
        return 1
    return code
