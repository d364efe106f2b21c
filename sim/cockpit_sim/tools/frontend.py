"""The pure-Python front-end of a node tool, for machines without a C compiler (`frontend.c` is
the same program and starts ~10x cheaper): hand the call to the resident tool service, exit as
the tool did. Only `_socket` is imported: the start-up of this process is the whole cost."""

from __future__ import annotations

import _socket
import array
import os
import signal
import sys
import time

from cockpit_sim.tools.callproto import (
    CWD_BIT,
    FORWARDED,
    REPLY,
    REPLY_MAGIC,
    SERVICE_GONE,
    SOCKET_NAME,
    STDIO,
    encode_request,
)

CONNECT_TRIES = 120  # x 25 ms: rides over a restart of the service


def _fail(tool: str, what: str, exc: OSError | None = None) -> None:
    reason = f": {exc.strerror}" if exc is not None and exc.strerror else ""
    os.write(2, f"{tool}: node tool service: {what}{reason}\n".encode())
    os._exit(SERVICE_GONE)


def _connect(tool: str, fleet_dir: str) -> _socket.socket:
    folder = os.open(fleet_dir, os.O_PATH | os.O_DIRECTORY)
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    for attempt in range(CONNECT_TRIES + 1):
        try:
            sock.connect(f"/proc/self/fd/{folder}/{SOCKET_NAME}")
            break
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            if attempt == CONNECT_TRIES:
                _fail(tool, "connect", exc)
            time.sleep(0.025)
        except OSError as exc:
            _fail(tool, "connect", exc)
    os.close(folder)
    return sock


def _environment() -> list[bytes]:
    """The environment this process was started with: the interpreter added LC_CTYPE to its
    own (PEP 538 locale coercion), which the caller never set."""
    with open("/proc/self/environ", "rb") as initial:
        return [entry for entry in initial.read().split(b"\0") if entry]


def send_request(sock: _socket.socket, request: bytes, fds: list[int]) -> None:
    """The request, the descriptors with its first byte. Nothing more is sent once it is all
    out: a quick tool may have ended and the service closed the connection meanwhile (a send of
    zero bytes would then fail with EPIPE)."""
    sent = sock.sendmsg(
        [request], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, array.array("i", fds))]
    )
    if sent < len(request):
        sock.sendall(request[sent:])


def _ignored() -> int:
    mask = 0
    for sig in range(1, 32):
        try:
            if signal.getsignal(sig) is signal.SIG_IGN:
                mask |= 1 << sig
        except (ValueError, OSError):
            continue
    return mask


def main(tool: str, fleet_dir: str) -> None:
    ignored = _ignored()
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    sock = _connect(tool, fleet_dir)
    fds, mask = [], 0
    for fd in STDIO:
        try:
            os.fstat(fd)
        except OSError:
            continue
        fds.append(fd)
        mask |= 1 << fd
    cwd = os.open(".", os.O_PATH | os.O_DIRECTORY)
    fds.append(cwd)
    mask |= 1 << CWD_BIT
    umask = os.umask(0)
    os.umask(umask)
    request = encode_request(
        os.fsencode(tool),
        [os.fsencode(arg) for arg in sys.argv],
        _environment(),
        mask=mask,
        nice=os.getpriority(os.PRIO_PROCESS, 0),
        umask=umask,
        ignored=ignored,
    )
    try:
        send_request(sock, request, fds)
    except OSError as exc:
        _fail(tool, "send", exc)
    os.close(cwd)

    def forward(signum: int, _frame: object) -> None:
        try:  # noqa: SIM105 (contextlib's import would cost every call)
            sock.send(bytes([signum]), _socket.MSG_DONTWAIT)
        except OSError:
            pass

    for sig in FORWARDED:
        if not ignored & (1 << sig):
            signal.signal(sig, forward)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
    reply = b""
    while len(reply) < REPLY.size:
        try:
            chunk = sock.recv(REPLY.size - len(reply))
        except OSError as exc:
            _fail(tool, "gone during the call", exc)
        if not chunk:
            _fail(tool, "gone during the call")
        reply += chunk
    magic, status = REPLY.unpack(reply)
    if magic != REPLY_MAGIC:
        _fail(tool, "bad answer")
    _exit_as(status)


def _exit_as(status: int) -> None:
    if os.WIFEXITED(status):
        os._exit(os.WEXITSTATUS(status))
    if not os.WIFSIGNALED(status):
        os._exit(SERVICE_GONE)
    sig = os.WTERMSIG(status)
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
    os.kill(os.getpid(), sig)
    os._exit(128 + sig)
