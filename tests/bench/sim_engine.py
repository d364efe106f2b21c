"""Start the simulated vLLM engine as a subprocess for bench tests (the real HTTP face).

The node directory carries the per-model compile-cache marker so the boot skips the b12x
autotune (a second boot, as the engine models it), and optionally a fault.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

FLASH = "/models/models--XiaomiMiMo--MiMo-V2.6-Flash-MOPD/snapshots/0123456789ab"
SMALL = "/models/models--Qwen--Qwen3-0.6B/snapshots/0123456789ab"
BOOT_SPEED = 200.0
"""The boot phases run at least this fast (serving keeps `speed`): tests wait seconds, not minutes."""


def _free_address() -> tuple[str, int]:
    host = f"127.0.{random.randint(1, 250)}.{random.randint(2, 250)}"
    with socket.socket() as sock:
        sock.bind((host, 0))
        return host, sock.getsockname()[1]


@contextlib.contextmanager
def running_engine(
    tmp: Path,
    model: str = FLASH,
    tp: int = 4,
    speed: float = 10.0,
    faults: tuple[str, ...] = (),
    boot_timeout: float = 90.0,
) -> Iterator[str]:
    """A serving engine's base URL; the process is killed on exit."""
    node = tmp / "node"
    (node / "cache").mkdir(parents=True, exist_ok=True)
    name = Path(model).parent.parent.name
    (node / "cache" / f"b12x-{name}.json").write_text("{}")
    (node / "node.json").write_text(json.dumps({"faults": {f: True for f in faults}}))
    host, port = _free_address()
    argv = [
        sys.executable, "-m", "cockpit.sim.engine", "serve", model,
        "--host", host, "--port", str(port),
        "--tensor-parallel-size", str(tp),
        "--max-num-seqs", "16", "--max-num-batched-tokens", "8192",
        "--enable-prefix-caching", "--max-model-len", "524288",
    ]  # fmt: skip
    if model == FLASH:
        argv += ["--speculative-config", json.dumps({"num_speculative_tokens": 5})]
    env = {**os.environ, "COCKPIT_SIM_SPEED": str(speed), "COCKPIT_SIM_NODE_DIR": str(node)}
    env["COCKPIT_SIM_BOOT_SPEED"] = str(max(BOOT_SPEED, speed))
    log = (tmp / "engine.log").open("w")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://{host}:{port}"
    try:
        deadline = time.monotonic() + boot_timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"engine exited {proc.returncode}: {(tmp / 'engine.log').read_text()[-2000:]}"
                )
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/health", timeout=1.0).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("engine did not become healthy")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
