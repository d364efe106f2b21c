"""The resident tool service and its front-ends (C and Python): a call through them behaves as a
fresh process of the tool would (argv, env, cwd, stdio, exit codes, signals, a dying caller)."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import signal
import socket
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cockpit_sim.fleet import SimFleet
from cockpit_sim.fleet.toolservice import compiled_frontend, write_frontend
from cockpit_sim.tools.callproto import (
    REPLY,
    REPLY_MAGIC,
    SERVICE_GONE,
    SOCKET_NAME,
    encode_request,
)
from cockpit_sim.tools.frontend import send_request
from cockpit_sim.tools.launchers import TOOLS, pythonpath
from cockpit_sim.tools.service import Request, ToolService, load_tools
from tests.fleet_fixtures import connect

TARGET = "tests.sim_fleet.tool_target"


def _gone(pid: int) -> bool:
    """Ended (a zombie left to this machine's slow-reaping init counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def _wait_gone(pids: list[int], within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if all(_gone(p) for p in pids):
            return True
        time.sleep(0.02)
    return False


def _read_pids(path: Path, within: float = 10.0) -> list[int]:
    deadline = time.monotonic() + within
    while not path.exists():
        assert time.monotonic() < deadline, "the tool did not start"
        time.sleep(0.02)
    return [int(p) for p in path.read_text().split()]


class Service:
    """A tool service on its own socket in `root`, serving the test tool as `target`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": pythonpath()}
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-S",
                "-m",
                "cockpit_sim.tools.service",
                str(self.root / SOCKET_NAME),
                f"target={TARGET}",
            ],
            stdout=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline() == b"ready\n"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


@pytest.fixture(scope="session")
def frontend_binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    binary = compiled_frontend(tmp_path_factory.mktemp("frontend-cache"))
    assert binary is not None, "cc could not build the C front-end (.ci/run installs gcc)"
    return binary


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    running = Service(tmp_path)
    running.start()
    yield running
    running.stop()


@pytest.fixture(params=["c", "python"])
def target(request: pytest.FixtureRequest, service: Service, frontend_binary: Path) -> Path:
    """The test tool's front-end (bin/target) in the service's folder."""
    bin_dir = service.root / "bin"
    bin_dir.mkdir()
    path = bin_dir / "target"
    write_frontend(path, frontend_binary if request.param == "c" else None, service.root)
    return path


def _report(target: Path, behaviour: str = "report", **options: object) -> dict[str, object]:
    result = subprocess.run([str(target), behaviour], capture_output=True, check=True, **options)  # type: ignore[call-overload]
    return json.loads(result.stdout)


def test_argv_env_cwd_nice_umask_and_ignored_signals_are_the_callers(
    target: Path, tmp_path: Path
) -> None:
    cwd = tmp_path / "a dir"
    cwd.mkdir()

    def caller() -> None:
        os.nice(3)
        os.umask(0o027)
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    result = subprocess.run(
        [str(target), "report"],
        capture_output=True,
        check=True,
        cwd=cwd,
        env={"TARGET_A": "x y", "TARGET_Ü": "ü\tz", "PATH": "/usr/bin:/bin", "TZ": "XYZ3"},
        preexec_fn=caller,
    )
    report = json.loads(result.stdout)
    assert report["argv"] == [str(target), "report"]
    assert report["env"] == {"TARGET_A": "x y", "TARGET_Ü": "ü\tz"}
    assert report["names"] == ["PATH", "TARGET_A", "TARGET_Ü", "TZ"]  # none of the service's
    assert report["cwd"] == str(cwd)
    assert report["nice"] == os.getpriority(os.PRIO_PROCESS, 0) + 3
    assert report["umask"] == 0o027
    assert report["sigint_ignored"] is True
    assert report["tz"] == "XYZ"
    assert report["leader"] is True  # its own session and group: signals reach all it starts
    current = os.umask(0)
    os.umask(current)
    default = _report(target)
    assert default["sigint_ignored"] is False and default["umask"] == current


def test_isatty_answers_for_the_callers_descriptors(target: Path) -> None:
    assert _report(target)["tty"] == [False, False, False]
    main, side = pty.openpty()
    try:
        subprocess.run([str(target), "report"], stdin=side, stdout=side, stderr=side, check=True)
        output = os.read(main, 4096)
    finally:
        os.close(side)
        os.close(main)
    assert json.loads(output)["tty"] == [True, True, True]


def test_a_closed_stdin_stays_closed(target: Path) -> None:
    result = subprocess.run(
        [str(target), "report"], capture_output=True, check=True, preexec_fn=lambda: os.close(0)
    )
    assert json.loads(result.stdout)["stdin"] is False


@pytest.mark.parametrize(
    ("args", "code", "stderr"),
    [
        (["exit", "7"], 7, ""),
        (["exit", "300"], 300 & 0xFF, ""),
        (["raise"], 1, "RuntimeError: boom"),
        (["sysexit", "bye"], 1, "bye"),
        (["no-such-behaviour"], 2, ""),
        (["quick-exit", "7"], 7, ""),
        (["quick-raise"], 1, "RuntimeError: boom"),
    ],
)
def test_exit_status_and_errors(target: Path, args: list[str], code: int, stderr: str) -> None:
    result = subprocess.run([str(target), *args], capture_output=True, text=True)
    assert result.returncode == code
    assert stderr in result.stderr
    if not stderr:
        assert result.stderr == ""


def test_a_tool_killed_by_a_signal_kills_its_front_end_the_same_way(target: Path) -> None:
    assert subprocess.run([str(target), "kill", "SIGTERM"]).returncode == -signal.SIGTERM
    assert subprocess.run([str(target), "kill", "SIGQUIT"]).returncode == -signal.SIGQUIT


def test_stdin_and_stdout_stream_both_ways(target: Path) -> None:
    proc = subprocess.Popen([str(target), "cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    for line in (b"first\n", b"second\n"):  # each answered before the next is written
        proc.stdin.write(line)
        proc.stdin.flush()
        assert proc.stdout.readline() == line
    blob = os.urandom(3 << 20)
    writer = threading.Thread(target=lambda: (proc.stdin.write(blob), proc.stdin.close()))
    writer.start()
    assert proc.stdout.read() == blob
    writer.join()
    assert proc.wait(10) == 0


def test_a_closed_reader_ends_the_tool_with_broken_pipe(target: Path) -> None:
    result = subprocess.run(
        f"{target} flood | head -c 10 >/dev/null; echo ${{PIPESTATUS[0]}}",
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert result.stdout.strip() == "1"
    assert result.stderr == ""  # no traceback, no "Exception ignored" at exit


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_to_the_caller_reaches_the_tool_and_its_children(
    target: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    pid_file = tmp_path / "pids"
    proc = subprocess.Popen([str(target), "wait-with-child", str(pid_file)])
    pids = _read_pids(pid_file)
    assert proc.pid not in pids  # the tool is the service's child, not this process
    proc.send_signal(sig)
    code = proc.wait(10)
    assert code == (130 if sig == signal.SIGINT else -sig)  # Python's KeyboardInterrupt: 130
    assert _wait_gone(pids)


def test_a_killed_caller_takes_its_tool_and_its_children_along(
    target: Path, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pids"
    proc = subprocess.Popen([str(target), "wait-with-child", str(pid_file)])
    pids = _read_pids(pid_file)
    proc.kill()
    proc.wait(10)
    assert _wait_gone(pids)


def test_a_stopped_service_fails_calls_and_kills_those_in_flight(
    target: Path, service: Service, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pids"
    proc = subprocess.Popen(
        [str(target), "wait-with-child", str(pid_file)], stderr=subprocess.PIPE, text=True
    )
    pids = _read_pids(pid_file)
    service.stop()
    assert proc.wait(10) == SERVICE_GONE
    assert proc.stderr is not None and "node tool service" in proc.stderr.read()
    assert _wait_gone(pids)
    late = subprocess.run([str(target), "report"], capture_output=True, text=True, timeout=20)
    assert late.returncode == SERVICE_GONE
    assert "node tool service: connect" in late.stderr


def test_the_service_refuses_a_tool_it_does_not_serve(
    service: Service, frontend_binary: Path
) -> None:
    (service.root / "bin").mkdir()
    other = service.root / "bin" / "nvidia-smi-typo"
    write_frontend(other, frontend_binary, service.root)
    result = subprocess.run([str(other)], capture_output=True, text=True)
    assert result.returncode == 127
    assert result.stderr == "nvidia-smi-typo: no such node tool\n"


def test_without_a_compiler_the_front_end_is_the_python_one(tmp_path: Path) -> None:
    assert compiled_frontend(tmp_path / "cache", cc="no-such-cc") is None
    path = tmp_path / "docker"
    write_frontend(path, None, tmp_path)
    assert path.read_text().startswith(f"#!{sys.executable} -S\n")
    assert "main('docker', " in path.read_text()


def test_the_service_outlives_many_callers_signalled_at_once(
    target: Path, service: Service, tmp_path: Path
) -> None:
    """A second signal can arrive as the first one's tool ends: the service sees both events of
    a call in one batch (the tool reaped, then a byte on its closed connection) and must keep
    serving everyone else."""
    callers = []
    for i in range(24):
        pid_file = tmp_path / f"pids{i}"
        callers.append((subprocess.Popen([str(target), "wait", str(pid_file)]), pid_file))
    tools = [pid for _, pid_file in callers for pid in _read_pids(pid_file)]
    for sig in (signal.SIGTERM, signal.SIGHUP):
        for proc, _ in callers:
            proc.send_signal(sig)
    for proc, _ in callers:
        assert proc.wait(10) in (-signal.SIGTERM, -signal.SIGHUP)
    assert _wait_gone(tools)
    assert service.proc is not None and service.proc.poll() is None
    assert _report(target)["argv"] == [str(target), "report"]


# ------------------------------------------------------------------ quick calls, answered in the service


def test_a_quick_call_is_answered_by_the_service_with_the_callers_argv_environment_and_umask(
    target: Path, service: Service
) -> None:
    assert service.proc is not None
    current = os.umask(0)
    os.umask(current)
    first = _report(
        target,
        "quick-report",
        env={"TARGET_A": "1", "PATH": "/usr/bin:/bin"},
        preexec_fn=lambda: os.umask(0o027),
    )
    second = _report(target, "quick-report", env={"TARGET_B": "2", "PATH": "/usr/bin:/bin"})
    assert first["pid"] == second["pid"] == service.proc.pid  # no fork
    assert first["argv"] == [str(target), "quick-report"]
    assert first["env"] == {"TARGET_A": "1"}
    assert first["names"] == ["PATH", "TARGET_A"]  # none of the service's
    assert second["env"] == {"TARGET_B": "2"}  # nor the call before's
    assert (first["umask"], second["umask"]) == (0o027, current)
    assert first["stdin"] is False
    assert _report(target)["pid"] != service.proc.pid  # a call its tool does not call quick


def test_a_quick_call_writing_to_a_terminal_is_forked(target: Path, service: Service) -> None:
    main, side = pty.openpty()
    try:
        subprocess.run([str(target), "quick-report"], stdout=side, check=True)
        output = os.read(main, 4096)
    finally:
        os.close(side)
        os.close(main)
    report = json.loads(output)
    assert report["tty"][1] is True
    assert service.proc is not None and report["pid"] != service.proc.pid


@pytest.mark.parametrize("behaviour", ["write", "quick-write"])
def test_stdout_and_stderr_reach_one_pipe_in_the_order_written(
    target: Path, behaviour: str
) -> None:
    result = subprocess.run(
        [str(target), behaviour, "out:a", "err:b", "out:c", "err:d"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=True,
    )
    assert result.stdout == "a\nb\nc\nd\n"


def _queued(pipe: int) -> int:
    return struct.unpack("i", fcntl.ioctl(pipe, termios.FIONREAD, b"\0\0\0\0"))[0]


def test_a_quick_call_to_a_reader_that_waits_holds_up_no_other_call(target: Path) -> None:
    size = 4 << 20
    big = subprocess.Popen([str(target), "quick-big", str(size)], stdout=subprocess.PIPE)
    assert big.stdout is not None
    deadline = time.monotonic() + 10
    while _queued(big.stdout.fileno()) < 4096:  # answered: its pipe filled, nobody reads it
        assert time.monotonic() < deadline, "the big answer never came"
        time.sleep(0.01)
    assert subprocess.run([str(target), "quick-exit", "3"], timeout=10).returncode == 3
    assert _report(target, timeout=10)["argv"] == [str(target), "report"]
    assert big.stdout.read() == b"y" * size
    assert big.wait(10) == 0


def test_a_quick_call_whose_reader_is_gone_ends_with_broken_pipe(target: Path) -> None:
    read, write = os.pipe()
    os.close(read)
    try:
        result = subprocess.run(
            [str(target), "quick-big", "10"], stdout=write, stderr=subprocess.PIPE, text=True
        )
    finally:
        os.close(write)
    assert (result.returncode, result.stderr) == (1, "")


def test_a_quick_call_whose_environment_cannot_be_set_fails_alone(
    target: Path, service: Service, tmp_path: Path
) -> None:
    """An entry the environment refuses (an empty name) fails that call with its reason; the
    service keeps its own environment and serves the next call."""
    err_path = tmp_path / "stderr"
    with (
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock,
        open(os.devnull, "wb") as out,
        open(err_path, "wb") as err,
    ):
        sock.settimeout(10)  # without an answer: a caller left waiting
        sock.connect(str(service.root / SOCKET_NAME))
        request = encode_request(
            b"target", [b"target", b"quick-report"], [b"=x", b"PATH=/bin"],
            mask=0b110, nice=0, umask=0o022, ignored=0,
        )  # fmt: skip
        send_request(sock, request, [out.fileno(), err.fileno()])
        magic, status = REPLY.unpack(sock.recv(REPLY.size, socket.MSG_WAITALL))
    assert (magic, os.waitstatus_to_exitcode(status)) == (REPLY_MAGIC, 1)
    assert "OSError: [Errno 22] Invalid argument" in err_path.read_text()
    report = _report(target, "quick-report", env={"TARGET_C": "3", "PATH": "/usr/bin:/bin"})
    assert report["names"] == ["PATH", "TARGET_C"]


@pytest.mark.parametrize(
    ("tool", "args", "quick"),
    [
        ("docker", ["ps", "-a", "--format", "{{json .}}"], True),
        ("docker", ["image", "inspect", "x"], True),
        ("docker", ["images", "-q"], True),
        ("docker", ["container", "ls"], True),
        ("docker", ["run", "-d", "x"], False),
        ("docker", ["image", "load"], False),
        ("docker", ["logs", "-f", "x"], False),
        ("docker", ["--host", "x", "ps"], False),
        ("docker", [], False),
        ("nvidia-smi", ["--query-gpu=index", "--format=csv"], True),
        ("nvidia-smi", ["-L"], True),
        ("nvidia-smi", [], True),
        ("nvidia-smi", ["--query-gpu=index", "--format=csv", "-lms", "1000"], False),
        ("nvidia-smi", ["--loop=5"], False),
        ("nvidia-smi", ["-l", "5"], False),
    ],
)
def test_the_node_tools_quick_calls_are_their_queries(
    tool: str, args: list[str], quick: bool
) -> None:
    _, found = load_tools({tool: TOOLS[tool]})
    assert found[tool](args) is quick


async def test_a_fleets_tools_are_front_ends_of_a_service_that_comes_back(
    fleet_factory: Callable[..., SimFleet],
) -> None:
    fleet = fleet_factory(1)
    for tool in ("docker", "nvidia-smi", "ssh"):
        assert (fleet.layout.bin_dir / tool).read_bytes()[:4] == b"\x7fELF"
    assert (
        (fleet.layout.bin_dir / "node-exec").read_text().startswith("#!")
    )  # a session, not a call
    first = int(fleet.layout.tools_pid.read_text())
    async with connect(fleet, "dgx1") as conn:
        assert (await conn.run("docker ps -q", check=True)).stdout == ""
        os.kill(first, signal.SIGKILL)
        gpu = await conn.run("nvidia-smi --query-gpu=name --format=csv,noheader", check=True)
        assert gpu.stdout.strip() == "NVIDIA GB10"  # answered by the service started again
    assert int(fleet.layout.tools_pid.read_text()) != first
    assert fleet.leftover_processes() == []  # the service is the fleet's, not a leftover


class _SentAllThenClosed:
    """A connection that takes the whole request at once, then finds its peer gone."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def sendmsg(self, buffers: list[bytes], ancillary: object) -> int:
        self.sent.extend(buffers)
        return sum(len(b) for b in buffers)

    def sendall(self, data: bytes) -> None:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_request_sent_whole_sends_nothing_more() -> None:
    """Seen under load: the tool had answered and the service closed the connection before the
    Python front-end's trailing `sendall(b"")`, which failed the call with EPIPE."""
    sock = _SentAllThenClosed()
    send_request(sock, b"request", [0, 1, 2])  # type: ignore[arg-type]
    assert sock.sent == [b"request"]


def test_a_fork_that_fails_leaves_the_service_able_to_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    """The service blocks SIGTERM across a fork; a fork refused (EAGAIN) left it blocked, so the
    service would have ignored every later stop. The call's descriptors are closed too."""

    def refused() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    conn, caller = socket.socketpair()  # the call's connection (the service never listens here)
    passed_r, passed_w = os.pipe()
    service = ToolService(conn, {"docker": lambda argv: 0})
    request = Request("docker", ["docker", "ps"], {}, {1: passed_w}, 0, 0o022, 0, 1, os.getuid())
    monkeypatch.setattr(os, "fork", refused)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    try:
        with pytest.raises(BlockingIOError):
            service._start(conn, request)
        assert signal.SIGTERM not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        with pytest.raises(OSError):
            os.fstat(passed_w)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # this process's, whatever happened
        for end in (conn, caller):
            end.close()
        os.close(passed_r)
