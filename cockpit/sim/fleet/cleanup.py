"""Find and end every process a simulated fleet started, by id, verified through its environment.

Every session and container on a node carries `COCKPIT_SIM_FLEET_DIR=<fleet dir>` in its
environment (sessions inherit the node env, containers the session's), so the fleet's processes
are exactly those whose /proc/PID/environ holds that entry: pid reuse cannot fool the check.
The resident tool service carries it too (its forked tools inherit its environ block), but it is
the fleet's own machinery, like the daemon: only a teardown counts and ends it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path


def fleet_processes(root: Path, *, service: bool = False) -> list[int]:
    """Pids of live processes started on the fleet at `root` (this process excluded; the tool
    service only with `service`)."""
    marker = f"COCKPIT_SIM_FLEET_DIR={root}".encode()
    skip = {os.getpid()}
    if not service:
        with contextlib.suppress(OSError, ValueError):
            skip.add(int((root / "tools.pid").read_text()))
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in skip:
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if state != "Z" and marker in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def kill_fleet_processes(root: Path, grace_s: float = 1.0) -> None:
    """SIGTERM the fleet's processes, then SIGKILL whatever is left after `grace_s`."""
    deadline = time.monotonic() + grace_s
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in fleet_processes(root, service=True):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        while (
            sig == signal.SIGTERM
            and time.monotonic() < deadline
            and fleet_processes(root, service=True)
        ):
            time.sleep(0.05)
