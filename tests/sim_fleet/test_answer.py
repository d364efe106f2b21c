"""A quick call's output, captured in the tool service and delivered without waiting on a reader
(`cockpit_sim.tools.answer`), in-process on real pipes and sockets."""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import sys
from collections.abc import Iterator

import pytest

from cockpit_sim.tools import answer

F_SETPIPE_SZ = 1031  # fcntl: the pipe's capacity
SMALL_PIPE = 4096


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read, write = os.pipe()
    fcntl.fcntl(write, F_SETPIPE_SZ, SMALL_PIPE)
    yield read, write
    for fd in (read, write):
        with contextlib.suppress(OSError):  # a test closed it
            os.close(fd)


def _drain(fd: int) -> bytes:
    os.set_blocking(fd, False)
    chunks = []
    try:
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    except BlockingIOError:
        pass
    return b"".join(chunks)


def test_the_streams_are_captured_in_the_order_a_reader_of_both_sees() -> None:
    before = sys.stdin, sys.stdout, sys.stderr
    with answer.captured() as chunks:
        assert sys.stdin is None
        sys.stdout.write("a\n")
        sys.stderr.write("b\n")  # by lines, as a forked tool's stderr
        sys.stdout.write("c\n")  # stdout by blocks: it waits for the flush
        sys.stdout.flush()
        sys.stderr.write("d")
    assert chunks == [(2, b"b\n"), (1, b"a\nc\n"), (2, b"d")]  # the rest flushed at the end
    assert (sys.stdin, sys.stdout, sys.stderr) == before


def test_what_fits_is_written_now_in_order_and_nothing_is_left(pipe: tuple[int, int]) -> None:
    read, write = pipe
    code, rest = answer.deliver([(1, b"a"), (1, b"b"), (2, b"c")], {1: write, 2: write}, 3)
    assert (code, rest) == (3, [])
    assert _drain(read) == b"abc"


def test_what_a_full_pipe_does_not_take_is_left_for_a_child_without_waiting(
    pipe: tuple[int, int],
) -> None:
    read, write = pipe
    big = b"x" * (3 * SMALL_PIPE)
    code, rest = answer.deliver([(1, big), (2, b"err")], {1: write, 2: write}, 0)
    taken = _drain(read)
    assert code == 0 and len(taken) == SMALL_PIPE  # the pipe's capacity, no more, no wait
    assert rest == [(1, big[SMALL_PIPE:]), (2, b"err")]
    assert os.get_blocking(write)  # the caller's descriptor keeps its flags


def test_a_pipe_with_no_reader_ends_the_call_with_status_1(pipe: tuple[int, int]) -> None:
    read, write = pipe
    os.close(read)
    assert answer.deliver([(1, b"lost")], {1: write, 2: write}, 0) == (1, [])


def test_a_pipe_the_service_cannot_open_again_is_left_whole_to_a_child(
    pipe: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, write = pipe

    def refused(path: str, flags: int, mode: int = 0o777) -> int:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(answer.os, "open", refused)
    assert answer.deliver([(1, b"all")], {1: write, 2: write}, 5) == (5, [(1, b"all")])


def test_a_socket_takes_what_it_can_without_waiting() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        big = b"y" * (1 << 20)
        code, rest = answer.deliver([(1, big)], {1: ours.fileno(), 2: ours.fileno()}, 0)
        assert code == 0 and rest and rest[0][0] == 1
        sent = len(big) - len(rest[0][1])
        assert 0 < sent < len(big)
        assert ours.getblocking()


def test_the_rest_is_written_by_waiting_on_the_reader(pipe: tuple[int, int]) -> None:
    read, write = pipe
    pid = os.fork()
    if pid == 0:  # as the service's writer child: its 1 and 2 are the caller's
        os.dup2(write, 1)
        os.dup2(write, 2)
        os._exit(answer.write_rest([(1, b"z" * (4 * SMALL_PIPE)), (2, b"!")], 4))
    os.close(write)
    received = b""
    while chunk := os.read(read, 1 << 16):
        received += chunk
    _, status = os.waitpid(pid, 0)
    assert received == b"z" * (4 * SMALL_PIPE) + b"!"
    assert os.waitstatus_to_exitcode(status) == 4
