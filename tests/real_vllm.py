"""The real vLLM lane for the tests: vLLM's CPU build on a one-node simulated fleet.

Booting it takes 65-190 s on 2 cores, so it boots once per test session, in the background from
the moment collection finds a test marked `realvllm` (tests/conftest.py), while the other tests
run; the vLLM processes run at nice 10 so that boot does not starve timing-sensitive tests. The
`real_lane` fixture waits for it; the session's end stops the lane and the fleet. Nothing is
skipped: without the CPU build installed (`.ci/run` installs it) the installer runs first.

The lane is started with an API key, fresh for the session, as an operator sets one: the recipe's
`[env] VLLM_API_KEY` (the fleet's copy of it), so every test of the real lane goes through vLLM's
own authentication: the cockpit's readiness, benches and probes must send the key.
"""

from __future__ import annotations

import concurrent.futures
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from cockpit_sim.fleet import SimFleet
from cockpit_sim.fleet.realvllm import CLUSTER, INVENTORY, RECIPE, install_real_vllm

TOOLS = Path(__file__).resolve().parents[1] / "tools" / "real-vllm-cpu"
BOOT_TIMEOUT_S = 900.0
NICE = 10


@dataclass(frozen=True)
class RealLane:
    fleet: SimFleet
    venv: Path
    launch_output: str
    api_key: str = field(repr=False)

    @property
    def inventory(self) -> Path:
        return self.fleet.inventory_dir


def cockpit(inventory: Path, *args: str, timeout: float = 600.0) -> subprocess.CompletedProcess:
    """`cockpit --inventory DIR ARGS` as an operator runs it (this venv's script, no PATH)."""
    exe = Path(sys.executable).parent / "cockpit"
    return subprocess.run(
        [str(exe), "--inventory", str(inventory), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "200"},
    )


def installed_venv() -> Path:
    """The CPU build's venv (the installer does nothing when it is installed already)."""
    done = subprocess.run(
        ["bash", str(TOOLS / "install.sh")], capture_output=True, text=True, check=True
    )
    return Path(done.stdout.strip().splitlines()[-1])


def _boot(root: Path, nice: int, shape: tuple[int, int] | None) -> RealLane:
    os.nice(nice)  # this thread only; the fleet and vLLM inherit it
    venv = installed_venv()
    model = root / "model"
    subprocess.run(
        [
            str(venv / "bin" / "python"),
            str(TOOLS / "make_model.py"),
            str(model),
            *(str(n) for n in shape or ()),
        ],
        capture_output=True,
        check=True,
    )
    fleet = SimFleet(root / "fleet", 1, recipes_dir=INVENTORY, owner_pid=os.getpid())
    fleet.start()
    api_key = "sk-" + secrets.token_urlsafe(24)
    try:
        install_real_vllm(fleet, venv, model)
        _set_api_key(fleet.inventory_dir / f"{RECIPE}.toml", api_key)
        launched = cockpit(
            fleet.inventory_dir,
            "launch",
            "--recipe",
            RECIPE,
            "--cluster",
            CLUSTER,
            "--boot-timeout",
            str(BOOT_TIMEOUT_S),
            timeout=BOOT_TIMEOUT_S + 120,
        )
        if launched.returncode != 0:
            raise RuntimeError(f"launch failed:\n{launched.stdout}\n{launched.stderr}")
    except BaseException:
        fleet.stop()
        raise
    return RealLane(fleet, venv, launched.stdout + launched.stderr, api_key)


def _set_api_key(recipe: Path, key: str) -> None:
    """The key in the recipe's [env], where an operator puts it (never `extra_args`)."""
    text = recipe.read_text()
    if text.count("\n[env]\n") != 1:
        raise RuntimeError(f"{recipe}: no [env] table to put VLLM_API_KEY in")
    recipe.write_text(text.replace("\n[env]\n", f'\n[env]\nVLLM_API_KEY = "{key}"\n'))


_lock = threading.Lock()
_future: concurrent.futures.Future[RealLane] | None = None
_root: Path | None = None


def start(
    nice: int = NICE, shape: tuple[int, int] | None = None
) -> concurrent.futures.Future[RealLane]:
    """Boot the lane in a background thread (once per session); `nice` 0 for a benchmark, and
    `shape` (hidden size, layers) for a model other than make_model.py's default."""
    global _future, _root
    with _lock:
        if _future is None:
            _root = Path(tempfile.mkdtemp(prefix="cockpit-real-vllm-"))
            _future = concurrent.futures.Future()
            future = _future

            def run() -> None:
                try:
                    future.set_result(_boot(_root, nice, shape))  # type: ignore[arg-type]
                except BaseException as exc:
                    future.set_exception(exc)

            threading.Thread(target=run, name="real-vllm-boot", daemon=True).start()
        return _future


def lane() -> RealLane:
    return start().result(timeout=BOOT_TIMEOUT_S + 600)


def stop() -> None:
    """End of session: stop the lane (if it came up) and the fleet, remove the folder."""
    global _future, _root
    with _lock:
        future, root, _future, _root = _future, _root, None, None
    if future is None:
        return
    try:
        real = future.result(timeout=BOOT_TIMEOUT_S + 600)
    except BaseException:
        real = None
    if real is not None:
        cockpit(real.inventory, "stop", "--lane", RECIPE, timeout=120)
        real.fleet.stop()
    if root is not None:
        shutil.rmtree(root, ignore_errors=True)
