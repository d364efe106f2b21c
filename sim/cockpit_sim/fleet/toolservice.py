"""The fleet's resident tool service and the front-ends on every node's PATH that call it.

A fresh `python -S` per `docker ps` costs ~35 ms of CPU (measured in benchmarks/status_scale.py);
a status round runs several tools per node, so at 64 nodes and more the fleet could not answer.
The daemon starts one service (`cockpit_sim.tools.service`, the tools imported once, a fork per
call) before any endpoint listens, and bin/{docker,nvidia-smi,ssh} become front-ends that hand it
their call: copies of a C program compiled once per machine with `cc` (cached by source hash in
the user cache dir), or small `python -S` scripts where no compiler works. Until the service is
ready bin/ holds the exec launchers; if it dies, the daemon starts it again (front-ends wait ~3 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import platform
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Literal

import platformdirs

from cockpit_sim.fleet.layout import FleetLayout
from cockpit_sim.tools.callproto import SOCKET_NAME
from cockpit_sim.tools.launchers import IMPORT_ROOTS, pythonpath
from cockpit_sim.tools.service import SERVED

FRONTEND_SOURCE = Path(__file__).resolve().parents[1] / "tools" / "frontend.c"
CC_FLAGS = ["-O2", "-s", "-Wall"]
START_TIMEOUT_S = 30.0
STOP_GRACE_S = 2.0
FrontendKind = Literal["c", "python"]

PY_FRONTEND = """#!{python} -S
import sys
sys.path[:0] = {roots!r}
from cockpit_sim.tools.frontend import main
main({tool!r}, {fleet!r})
"""


def log(message: str) -> None:
    print(f"tool service: {message}", file=sys.stderr, flush=True)


def compiled_frontend(cache_dir: Path | None = None, cc: str = "cc") -> Path | None:
    """The C front-end built for this machine (cached), None when no compiler builds it."""
    source = FRONTEND_SOURCE.read_bytes()
    digest = hashlib.sha256(source + platform.machine().encode()).hexdigest()[:16]
    cache = cache_dir or Path(platformdirs.user_cache_dir("cockpit")) / "sim-frontend"
    target = cache / f"frontend-{digest}"
    if os.access(target, os.X_OK):
        return target
    compiler = shutil.which(cc)
    if compiler is None:
        return None
    cache.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    try:
        subprocess.run(
            [compiler, *CC_FLAGS, "-o", str(partial), str(FRONTEND_SOURCE)],
            check=True,
            capture_output=True,
            timeout=120,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        log(f"{compiler} could not build the front-end: {exc} {detail.decode()[-500:]}")
        partial.unlink(missing_ok=True)
        return None
    os.replace(partial, target)  # atomic: parallel fleet starts may build it at once
    return target


def write_frontend(path: Path, binary: Path | None, fleet_dir: Path) -> None:
    """The front-end of tool `path.name` at `path` (a rename: a call in flight keeps the file it
    started), calling the service in `fleet_dir`: a copy of `binary`, or the Python script."""
    partial = path.with_name(f".{path.name}.tmp")
    if binary is not None:
        shutil.copyfile(binary, partial)
    else:
        partial.write_text(
            PY_FRONTEND.format(
                python=sys.executable,
                roots=list(IMPORT_ROOTS),
                tool=path.name,
                fleet=str(fleet_dir),
            )
        )
    partial.chmod(0o755)
    os.replace(partial, path)


def install_frontends(layout: FleetLayout, binary: Path | None) -> FrontendKind:
    """Replace bin/'s launchers with front-ends of the fleet's service; a tool that is a real
    program there (a symlink: Debian's `docker` client on a real-Docker fleet) stays as it is."""
    for name in SERVED:
        if not (layout.bin_dir / name).is_symlink():
            write_frontend(layout.bin_dir / name, binary, layout.root)
    return "c" if binary is not None else "python"


class ToolService:
    """The service process of one fleet: `start`, `keep` (restart on death), `stop`."""

    def __init__(self, layout: FleetLayout) -> None:
        self.layout = layout
        self.socket = layout.root / SOCKET_NAME
        self.frontend: FrontendKind | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._stopping = False

    async def start(self) -> None:
        """Start the service; the first time, put the front-ends on the nodes' PATH."""
        env = dict(os.environ)
        env["PYTHONPATH"] = pythonpath(env.get("PYTHONPATH"))
        env["COCKPIT_SIM_FLEET_DIR"] = str(self.layout.root)  # found and ended by cleanup
        self._proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-S",
            "-m",
            "cockpit_sim.tools.service",
            str(self.socket),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            env=env,
            cwd=self.layout.root,
            start_new_session=True,
        )
        assert self._proc.stdout is not None
        try:
            ready = await asyncio.wait_for(self._proc.stdout.readline(), START_TIMEOUT_S)
        except TimeoutError:
            ready = b""
        if ready != b"ready\n":
            await self.stop()
            raise OSError("the node tool service did not start (see fleet.log)")
        self.layout.tools_pid.write_text(str(self._proc.pid))
        if self.frontend is None:
            binary = await asyncio.to_thread(compiled_frontend)
            self.frontend = install_frontends(self.layout, binary)
            log(f"ready, {self.frontend} front-ends")

    async def keep(self) -> None:
        """Start the service again whenever it dies (front-ends retry their connect meanwhile)."""
        while not self._stopping and self._proc is not None:
            code = await self._proc.wait()
            if self._stopping:
                return
            log(f"exited ({code}); starting it again")
            await self.start()

    async def stop(self) -> None:
        self._stopping = True
        proc, self._proc = self._proc, None
        if proc is not None and proc.returncode is None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(sig)
                try:
                    await asyncio.wait_for(proc.wait(), STOP_GRACE_S)
                    break
                except TimeoutError:
                    continue
        self.layout.tools_pid.unlink(missing_ok=True)
