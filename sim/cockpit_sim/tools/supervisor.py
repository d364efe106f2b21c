"""The detached keeper of one simulated container: runs its main process, logs, records the exit.

`docker run -d` forks into this and returns once the main process runs. Like the daemon's
json-file log driver it writes one JSON object per output line (`log`, `stream`, `time`), which
`docker logs` reads back with `--since`, `--tail` and `--timestamps`.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from cockpit_sim.tools.nodestate import NodeState

if TYPE_CHECKING:
    import subprocess

EXEC_PIDS = "exec.pids"  # per container: the processes `docker exec` started in it


def end_execs(container_dir: Path) -> None:
    """SIGKILL what `docker exec` started in the container: it ends with the main process."""
    try:
        pids = [int(p) for p in (container_dir / EXEC_PIDS).read_text().split()]
    except (OSError, ValueError):
        return
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def update_state(state: NodeState, cid: str, **fields: object) -> bool:
    """Merge `fields` into the container's State; False when the record is gone (removed)."""
    with state.locked():
        containers = state.containers()
        for record in containers:
            if record["Id"] == cid:
                record["State"].update(fields)
                state.write("containers.json", containers)
                return True
    return False


def start_failure(program: str, exc: OSError) -> str:
    """The daemon's reason when runc cannot exec the container's program."""
    if "/" not in program and isinstance(exc, FileNotFoundError):
        cause = f'exec: "{program}": executable file not found in $PATH'
    else:
        cause = f'exec: "{program}": {exc.strerror.lower() if exc.strerror else exc}'
        if isinstance(exc, FileNotFoundError):
            cause = f'exec: "{program}": stat {program}: no such file or directory'
    return (
        "failed to create shim task: OCI runtime create failed: runc create failed: unable to "
        f"start container process: {cause}: unknown"
    )


def _detach_stdio() -> None:
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)


def supervise(
    state: NodeState,
    cid: str,
    argv: list[str],
    env: dict[str, str],
    cwd: str,
    ready_fd: int,
    auto_remove: bool,
) -> int:
    """Run in a forked child: start the main process, report its pid on ready_fd, pump its output
    into the log until it exits, record the exit code (and remove the container when
    `auto_remove`). Returns the container's exit code."""
    import subprocess

    os.setsid()
    _detach_stdio()
    log_path = state.containers_dir / cid / "json.log"
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out_w,
            stderr=err_w,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        reason = start_failure(argv[0], exc)
        os.write(ready_fd, f"error:{reason}".encode())
        update_state(state, cid, ExitCode=127, Error=reason)  # created, never started
        return 127
    finally:
        os.close(out_w)
        os.close(err_w)
    (state.containers_dir / cid / "supervisor.pid").write_text(str(os.getpid()))
    update_state(state, cid, Status="running", Running=True, Pid=proc.pid, StartedAt=now_iso())
    os.write(ready_fd, f"pid:{proc.pid}".encode())
    os.close(ready_fd)
    _pump(proc, {out_r: "stdout", err_r: "stderr"}, log_path)
    code = proc.wait()
    end_execs(state.containers_dir / cid)
    exit_code = 128 - code if code < 0 else code
    still_listed = update_state(
        state,
        cid,
        Status="exited",
        Running=False,
        Pid=0,
        ExitCode=exit_code,
        FinishedAt=now_iso(),
    )
    if still_listed and auto_remove:
        from cockpit_sim.tools.docker.containers import remove_record

        remove_record(state, cid)
    return exit_code


def _pump(proc: subprocess.Popen[bytes], streams: dict[int, str], log_path: Path) -> None:
    """Copy output lines into the log; when the main process ends, kill what it left behind
    (a container's processes die with its pid 1) and drain the pipes."""
    selector = selectors.DefaultSelector()
    for fd in streams:
        selector.register(fd, selectors.EVENT_READ)
    pidfd = os.pidfd_open(proc.pid)
    selector.register(pidfd, selectors.EVENT_READ)
    partial = {fd: b"" for fd in streams}
    open_fds = set(streams)
    with open(log_path, "ab", buffering=0) as log:
        while open_fds:
            for key, _ in selector.select():
                fd = key.fd
                if fd == pidfd:
                    selector.unregister(pidfd)
                    os.close(pidfd)
                    proc.wait()
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    selector.unregister(fd)
                    os.close(fd)
                    open_fds.discard(fd)
                    lines = [partial[fd]] if partial[fd] else []
                else:
                    *lines, partial[fd] = (partial[fd] + chunk).split(b"\n")
                    lines = [line + b"\n" for line in lines]
                stamp = now_iso()
                text = "".join(
                    json.dumps(
                        {"log": line.decode(errors="replace"), "stream": streams[fd], "time": stamp}
                    )
                    + "\n"
                    for line in lines
                )
                if text:
                    log.write(text.encode())
