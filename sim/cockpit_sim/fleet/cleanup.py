"""Find and end every process a simulated fleet started, by id, verified through its environment.

Every session and container on a node carries `COCKPIT_SIM_FLEET_DIR=<fleet dir>` in its
environment (sessions inherit the node env, containers the session's), so the fleet's processes
are exactly those whose /proc/PID/environ holds that entry: pid reuse cannot fool the check.
The resident tool service carries it too (its forked tools inherit its environ block), but it is
the fleet's own machinery, like the daemon: only a teardown counts and ends it. The nodes'
namespace holders (`cockpit_sim.fleet.namespaces`) carry `COCKPIT_SIM_HOLDER=<fleet dir>` instead:
they are the fleet's machinery, not something a session left behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

HOLDER_KEY = "COCKPIT_SIM_HOLDER"


def _with_entry(entry: bytes, skip: set[int]) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) in skip:
            continue
        try:
            environ = (proc / "environ").read_bytes()
            state = (proc / "stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if state != "Z" and entry in environ.split(b"\0"):
            found.append(int(proc.name))
    return found


def fleet_processes(root: Path, *, service: bool = False) -> list[int]:
    """Pids of live processes started on the fleet at `root` (this process excluded; the tool
    service only with `service`)."""
    skip = {os.getpid()}
    if not service:
        with contextlib.suppress(OSError, ValueError):
            skip.add(int((root / "tools.pid").read_text()))
    return _with_entry(f"COCKPIT_SIM_FLEET_DIR={root}".encode(), skip)


def holder_processes(root: Path) -> list[int]:
    """Pids of the fleet's live namespace holders."""
    return _with_entry(f"{HOLDER_KEY}={root}".encode(), {os.getpid()})


def kill_fleet_processes(root: Path, grace_s: float = 1.0, gone_s: float = 5.0) -> list[int]:
    """SIGTERM the fleet's processes and holders, SIGKILL whatever is left after `grace_s`, then
    wait (up to `gone_s`) until none is alive; returns those still alive (none, normally)."""

    def alive() -> list[int]:
        return fleet_processes(root, service=True) + holder_processes(root)

    deadline = time.monotonic() + grace_s
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in alive():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        while sig == signal.SIGTERM and time.monotonic() < deadline and alive():
            time.sleep(0.05)
    deadline = time.monotonic() + gone_s
    while (left := alive()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left
