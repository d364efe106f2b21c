"""Start simulated engine ranks as real processes on loopback for integration tests."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).parents[2]
FLASH = "/hf/models--XiaomiMiMo--MiMo-V2.6-Flash-MOPD/snapshots/5f1c0de2a7b4"
SMALL = "/hf/models--Qwen--Qwen3-0.6B/snapshots/c1899de289a04d12"
RECIPE_ENV = {
    "NCCL_DEBUG": "INFO",
    "NCCL_IB_HCA": "rocep1s0f0,roceP2p1s0f0",
    "NCCL_IB_GID_INDEX": "3",
    "NCCL_SOCKET_IFNAME": "enp1s0f0np0",
}


def free_address(host: str | None = None) -> tuple[str, int]:
    """A random 127.0.0.x (or `host`) with a port free on it (parallel runs do not collide)."""
    host = host or f"127.0.0.{random.randint(20, 250)}"
    with socket.socket() as s:
        s.bind((host, 0))
        return host, s.getsockname()[1]


@dataclass
class EngineProc:
    proc: subprocess.Popen[bytes]
    log: Path
    node_dir: Path
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def wait_for(self, needle: str, timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in self.text():
                return True
            if self.proc.poll() is not None:
                return needle in self.text()
            time.sleep(0.05)
        return False

    def wait_exit(self, timeout: float = 30.0) -> int:
        return self.proc.wait(timeout=timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start(
    node_dir: Path,
    model: str,
    *extra: str,
    speed: float = 2000.0,
    boot_speed: float | None = None,
    host_port: tuple[str, int] | None = None,
    node: dict[str, object] | None = None,
    env: dict[str, str] | None = None,
) -> EngineProc:
    node_dir.mkdir(parents=True, exist_ok=True)
    if node is not None:
        (node_dir / "node.json").write_text(json.dumps(node))
    host, port = host_port or free_address()
    log = node_dir / f"engine-{port}-{time.monotonic_ns()}.log"
    argv = [sys.executable, "-m", "cockpit_sim.engine", "serve", model, "--host", host]
    argv += ["--port", str(port), *extra]
    full_env = os.environ | RECIPE_ENV | (env or {})
    full_env |= {
        "COCKPIT_SIM_NODE": node_dir.name,
        "COCKPIT_SIM_NODE_DIR": str(node_dir),
        "COCKPIT_SIM_SPEED": str(speed),
        "COCKPIT_SIM_BOOT_SPEED": str(boot_speed or speed),
    }
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=full_env, cwd=REPO)
    return EngineProc(proc, log, node_dir, host, port)
