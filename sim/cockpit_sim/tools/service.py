"""The resident service behind a simulated fleet's node tools: the tools imported once, a fork per
call, so a `docker ps` on a node costs a fork instead of a fresh interpreter; a call its tool
says is quick (a query of the node's state files) is answered in the service itself, without the
fork (`cockpit_sim.tools.answer`).

`python -S -m cockpit_sim.tools.service SOCKET [NAME=MODULE ...]` listens on SOCKET (protocol in
`callproto`). Each call forks a child that becomes the caller's tool: the caller's stdin, stdout,
stderr and cwd (passed descriptors, so pipes stream, `isatty` answers for the caller's terminal and
a closed reader gives BrokenPipeError), its argv and environment, nice value, umask and autogroup
nice. The child leads a session of its own; the caller's forwarded signals go to that session's
process group, and when the caller dies (its connection closes) the group gets SIGHUP, then
SIGKILL after a grace, as the SSH endpoints treat a closed session. The wait status goes back to
the front-end, which exits the same way.
"""

from __future__ import annotations

import array
import contextlib
import ctypes
import gc
import importlib
import io
import os
import selectors
import signal
import socket
import struct
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from cockpit_sim.tools import answer
from cockpit_sim.tools.callproto import (
    CWD_BIT,
    FORWARDED,
    MAX_PAYLOAD,
    REPLY,
    REPLY_MAGIC,
    REQUEST,
    REQUEST_MAGIC,
    STDIO,
    decode_payload,
)
from cockpit_sim.tools.launchers import TOOLS

SERVED = ("docker", "nvidia-smi", "ssh")
"""The tools called through the service. node-exec is not: it is an OpenSSH session itself (the
ForceCommand), which must stay in sshd's session and process tree, where the session's terminal
is its controlling one and the endpoint's stop finds what it runs; it costs one start per session,
not per tool call."""
KILL_GRACE_S = 1.0  # SIGHUP → SIGKILL for the tool of a caller that died (as NodeSession does)
REQUEST_TIMEOUT_S = 5.0  # a front-end sends its whole request at once
PR_SET_PDEATHSIG = 1
WARM_IMPORTS = ("subprocess", "threading", "hashlib", "tarfile", "traceback")
"""Modules the tools import lazily, loaded once here rather than in every call that needs them."""

UCRED = struct.Struct("3i")  # SO_PEERCRED: pid, uid, gid
Tool = Callable[[list[str]], int | None]
Quick = Callable[[list[str]], bool]
"""A tool module's optional `quick(args)`: True for a call that only reads (and atomically
rewrites) the node's files and returns at once, reading no stdin and needing no cwd, terminal,
nice or session of its own. The service runs such a call in its own process, with the caller's
argv, environment and umask, and forks only to finish writing to a reader that is slow."""
HELD = frozenset({*FORWARDED, signal.SIGCHLD})
"""Blocked across a fork until the child has its own handlers: a forwarded signal must not run
the service's (SIGTERM's exits the service). A small set: the mask comes back as enums."""


class ProtocolError(Exception):
    """A request that is not one (closed early, wrong magic, too long)."""


@dataclass
class Request:
    tool: str
    argv: list[str]
    env: dict[str, str]
    fds: dict[int, int]  # target (0, 1, 2, CWD_BIT) → received descriptor
    nice: int
    umask: int
    ignored: int  # bit N: the caller ignores signal N
    caller_pid: int
    caller_uid: int


@dataclass
class Call:
    conn: socket.socket
    pid: int
    pidfd: int
    kill_at: float | None = None  # when the tool of a caller that died gets SIGKILL
    hung_up: bool = False
    done: bool = False  # reaped (a later event of the same batch finds it so)


def load_tools(specs: Mapping[str, str]) -> tuple[dict[str, Tool], dict[str, Quick]]:
    """name → the `main(argv)` of its module (`module` or `module:function`), and name → the
    module's `quick` for the tools that have one."""
    tools, quick = {}, {}
    for name, spec in specs.items():
        module_name, _, function = spec.partition(":")
        module = importlib.import_module(module_name)
        tools[name] = getattr(module, function or "main")
        if callable(getattr(module, "quick", None)):
            quick[name] = module.quick
    return tools, quick


def _recv_exact(conn: socket.socket, size: int) -> bytes:
    chunks, got = [], 0
    while got < size:
        chunk = conn.recv(min(size - got, 1 << 16))
        if not chunk:
            raise ProtocolError("caller closed the connection mid-request")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_request(conn: socket.socket) -> Request:
    """One request from a just-accepted connection (its descriptors are the caller's)."""
    fds = array.array("i")
    header, ancillary, _, _ = conn.recvmsg(REQUEST.size, socket.CMSG_SPACE(4 * fds.itemsize))
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    try:
        if not header:
            raise ProtocolError("caller closed the connection before its request")
        header += _recv_exact(conn, REQUEST.size - len(header))
        magic, size, argc, envc, mask, nice, umask, ignored = REQUEST.unpack(header)
        if magic != REQUEST_MAGIC or size > MAX_PAYLOAD:
            raise ProtocolError("not a tool request")
        tool, argv, env = decode_payload(_recv_exact(conn, size), argc, envc)
        targets = [bit for bit in (*STDIO, CWD_BIT) if mask & (1 << bit)]
        if len(targets) != len(fds):
            raise ProtocolError("descriptor count does not match the mask")
    except (ProtocolError, ValueError, OSError):
        for fd in fds:
            os.close(fd)
        raise
    pid, uid, _ = UCRED.unpack(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, UCRED.size))
    received = dict(zip(targets, fds, strict=True))
    return Request(tool, argv, env, received, nice, umask, ignored, pid, uid)


def _kill_group(pid: int, sig: int) -> None:
    """Signal the tool's process group (the tool alone while it has not formed it yet)."""
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def _std_streams() -> None:
    """New sys.stdin/stdout/stderr on descriptors 0-2, buffered as a fresh interpreter's are."""
    opened = {fd: _is_open(fd) for fd in STDIO}
    sys.stdin = (
        open(0, encoding="utf-8", errors="surrogateescape", closefd=False) if opened[0] else None  # noqa: SIM115
    )
    sys.stdout = (
        open(1, "w", encoding="utf-8", errors="surrogateescape", closefd=False)  # noqa: SIM115
        if opened[1]
        else None
    )
    sys.stderr = (
        io.TextIOWrapper(
            open(2, "wb", closefd=False),  # noqa: SIM115
            encoding="utf-8",
            errors="backslashreplace",
            line_buffering=True,
        )
        if opened[2]
        else None
    )


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _adopt_caller(request: Request) -> None:
    """The caller's nice, umask and autogroup nice (the probe lowers its session's group)."""
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, 0, request.nice)
    os.umask(request.umask)
    try:
        with open(f"/proc/{request.caller_pid}/autogroup") as group:
            group_nice = group.read().split()[-1]
        if group_nice != "0":
            with open("/proc/self/autogroup", "w") as own:
                own.write(group_nice)
    except (OSError, IndexError):
        pass


def _become_tool(request: Request, libc: ctypes.CDLL | None) -> None:
    """In the forked child: the caller's descriptors, cwd, environment, signals."""
    os.setsid()
    if libc is not None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # the service gone: its calls too
    for sig in (*FORWARDED, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as the interpreter sets them
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    for sig in range(1, 32):
        if request.ignored & (1 << sig) and sig not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(sig, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD)
    _adopt_caller(request)
    for target in STDIO:
        if target in request.fds:
            os.dup2(request.fds[target], target)
        else:
            with contextlib.suppress(OSError):
                os.close(target)
    if CWD_BIT in request.fds:
        os.fchdir(request.fds[CWD_BIT])
    if libc is None or libc.close_range(3, 0xFFFFFFFF, 0) != 0:
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
    _take_environment(request.env)
    sys.argv = list(request.argv)
    _std_streams()
    with contextlib.suppress(OSError), open("/proc/self/comm", "w") as comm:
        comm.write(request.tool[:15])


def _take_environment(env: dict[str, str]) -> None:
    """os.environ (and the C environment execs inherit) becomes `env`; only what differs is
    changed, as a node's sessions mostly inherit the service's own environment."""
    tz = os.environ.get("TZ")
    for key in [k for k in os.environ if k not in env]:
        del os.environ[key]
    for key, value in env.items():
        if os.environ.get(key) != value:
            os.environ[key] = value
    if os.environ.get("TZ") != tz:
        time.tzset()


def run_tool(tool: Tool, args: list[str]) -> int:
    """What the exec launcher's script does around `main`: the same exit codes and messages."""
    try:
        code = tool(args)
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        code = 1
    except KeyboardInterrupt:
        code = 130
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except BaseException:
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()  # type: ignore[union-attr]
    return _exit_code(code)


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    with contextlib.suppress(OSError, ValueError, AttributeError):
        print(code, file=sys.stderr, flush=True)
    return 1


class ToolService:
    """The accept/fork/reap loop (one thread; every call's child runs on its own, and a quick
    call runs in this thread, briefly)."""

    def __init__(
        self,
        listener: socket.socket,
        tools: Mapping[str, Tool],
        quick: Mapping[str, Quick] | None = None,
    ) -> None:
        self.listener = listener
        self.tools = dict(tools)
        self.quick = dict(quick or {})
        self.calls: dict[int, Call] = {}  # pid → call
        self.selector = selectors.DefaultSelector()
        self.uid = os.getuid()
        self._libc = _libc()

    def serve(self) -> None:
        self.listener.setblocking(False)
        self.selector.register(self.listener, selectors.EVENT_READ)
        while True:
            for key, _ in self.selector.select(self._next_timeout()):
                try:
                    if key.fileobj is self.listener:
                        self._accept()
                    elif not key.data[1].done:
                        kind, call = key.data
                        (self._caller_wrote if kind == "conn" else self._reap)(call)
                except Exception:  # one call's trouble must not stop every node's tools
                    traceback.print_exc()
            self._expire()

    def _next_timeout(self) -> float | None:
        deadlines = [c.kill_at for c in self.calls.values() if c.kill_at is not None]
        return max(min(deadlines) - time.monotonic(), 0.0) if deadlines else None

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except BlockingIOError:
                return
            conn.settimeout(REQUEST_TIMEOUT_S)
            try:
                request = read_request(conn)
            except (ProtocolError, ValueError, OSError):
                conn.close()
                continue
            self._start(conn, request)

    def _start(self, conn: socket.socket, request: Request) -> None:
        tool = self.tools.get(request.tool)
        if tool is None or request.caller_uid != self.uid:
            if 2 in request.fds:
                with contextlib.suppress(OSError):
                    os.write(request.fds[2], f"{request.tool}: no such node tool\n".encode())
            for fd in request.fds.values():
                os.close(fd)
            with contextlib.suppress(OSError):
                conn.sendall(REPLY.pack(REPLY_MAGIC, 127 << 8))
            conn.close()
            return
        if self._is_quick(request) and self._answer(conn, request, tool):
            return
        self._fork(conn, request, lambda: run_tool(tool, request.argv[1:]))

    def _is_quick(self, request: Request) -> bool:
        quick = self.quick.get(request.tool)
        try:
            return quick is not None and quick(request.argv[1:])
        except Exception:  # a predicate's bug costs a fork, not the call
            return False

    def _answer(self, conn: socket.socket, request: Request, tool: Tool) -> bool:
        """Run a quick call here and reply; False (nothing done) when its stdout or stderr is
        a terminal or closed: then it is forked, as it may care."""
        if not all(
            target in request.fds and answer.plain(request.fds[target]) for target in (1, 2)
        ):
            return False
        signal.pthread_sigmask(signal.SIG_BLOCK, HELD)  # a stop must not end as the tool's exit
        saved_env, saved_argv, saved_umask = dict(os.environ), sys.argv, os.umask(request.umask)
        try:
            with answer.captured() as chunks:
                try:
                    _take_environment(request.env)
                    sys.argv = list(request.argv)
                    code = run_tool(tool, request.argv[1:])
                except Exception:  # the call's set-up failed: it fails, the service goes on
                    traceback.print_exc()
                    code = 1
        finally:
            _take_environment(saved_env)
            sys.argv = saved_argv
            os.umask(saved_umask)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD)
        code, rest = answer.deliver(chunks, request.fds, code)
        if rest:  # a reader slower than the call: a child waits on it instead of the service
            self._fork(conn, request, lambda: answer.write_rest(rest, code))
            return True
        for fd in request.fds.values():
            os.close(fd)
        with contextlib.suppress(OSError):
            conn.setblocking(True)
            conn.sendall(REPLY.pack(REPLY_MAGIC, code << 8))
        conn.close()
        return True

    def _fork(self, conn: socket.socket, request: Request, work: Callable[[], int]) -> None:
        """A child that becomes the caller's tool and does `work`; its wait status is the reply."""
        signal.pthread_sigmask(signal.SIG_BLOCK, HELD)
        try:
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    _become_tool(request, self._libc)
                    code = work()
                finally:
                    os._exit(code)
        finally:  # a fork that failed (EAGAIN) must not leave SIGTERM blocked: the service deaf
            signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD)
            for fd in request.fds.values():
                os.close(fd)
        conn.setblocking(False)
        call = Call(conn, pid, os.pidfd_open(pid))
        self.calls[pid] = call
        self.selector.register(conn, selectors.EVENT_READ, ("conn", call))
        self.selector.register(call.pidfd, selectors.EVENT_READ, ("pid", call))

    def _caller_wrote(self, call: Call) -> None:
        try:
            data = call.conn.recv(64)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            for sig in data:
                _kill_group(call.pid, sig)
            return
        # the caller is gone (killed, or its session closed): its tool goes too
        self.selector.unregister(call.conn)
        call.hung_up = True
        _kill_group(call.pid, signal.SIGHUP)
        call.kill_at = time.monotonic() + KILL_GRACE_S

    def _reap(self, call: Call) -> None:
        # while the tool is a zombie its pid names its group only: what it left there dies too
        _kill_group(call.pid, signal.SIGKILL)
        _, status = os.waitpid(call.pid, 0)
        self.selector.unregister(call.pidfd)
        os.close(call.pidfd)
        del self.calls[call.pid]
        call.done = True
        if not call.hung_up:
            self.selector.unregister(call.conn)
            call.conn.setblocking(True)
            with contextlib.suppress(OSError):
                call.conn.sendall(REPLY.pack(REPLY_MAGIC, status))
        call.conn.close()

    def close(self) -> None:
        """The service is stopping: every call in flight ends now, with all it started."""
        for call in self.calls.values():
            _kill_group(call.pid, signal.SIGKILL)

    def _expire(self) -> None:
        now = time.monotonic()
        for call in list(self.calls.values()):
            if call.kill_at is not None and call.kill_at <= now:
                call.kill_at = None
                _kill_group(call.pid, signal.SIGKILL)


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def bind(path: str) -> socket.socket:
    """A listening socket at `path`, however long (sun_path holds 107 bytes): bound through
    /proc/self/fd of its folder. Only this user may connect."""
    folder = os.open(os.path.dirname(path) or ".", os.O_PATH | os.O_DIRECTORY)
    try:
        short = f"/proc/self/fd/{folder}/{os.path.basename(path)}"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(short)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o077)
        try:
            listener.bind(short)
        finally:
            os.umask(old)
        listener.listen(socket.SOMAXCONN)
    finally:
        os.close(folder)
    return listener


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    specs = {name: TOOLS[name] for name in SERVED}
    specs.update(arg.split("=", 1) for arg in args[1:])
    tools, quick = load_tools(specs)
    for module in WARM_IMPORTS:
        importlib.import_module(module)
    libc = _libc()
    parent = os.getppid()
    if libc is not None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)  # never outlive the fleet's daemon
    if os.getppid() != parent:
        return
    listener = bind(args[0])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    gc.collect()
    gc.freeze()  # forked children do not dirty the imported objects' pages by collecting them
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # the starter stops reading once ready
    os.close(devnull)
    service = ToolService(listener, tools, quick)
    try:
        service.serve()
    finally:
        service.close()
        listener.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(args[0])


if __name__ == "__main__":
    main()
