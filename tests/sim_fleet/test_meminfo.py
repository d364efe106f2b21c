"""A simulated node's /proc/meminfo: a GB10's unified memory, minus what its engine holds."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from cockpit.plan.memory_fit import GB10_MEMORY_GIB
from cockpit.telemetry.gpu import parse_meminfo
from cockpit_sim.fleet.meminfo import OS_HELD_GIB, meminfo_path, refresh_meminfo, render_meminfo

GIB = 1 << 30


def test_meminfo_is_a_gb10_minus_the_engine() -> None:
    info = parse_meminfo(render_meminfo(60 * GIB))
    assert info is not None
    assert abs(info.total_bytes / GIB - GB10_MEMORY_GIB) < 0.001
    held = (info.total_bytes - info.available_bytes) / GIB
    assert abs(held - (60 + OS_HELD_GIB)) < 0.01


def _publish(node: Path, mem_used_mib: int, pid: int) -> None:
    load = {"ts": time.time(), "mem_used_mib": mem_used_mib, "pid": pid, "phase": "idle"}
    (node / "gpu_load.json").write_text(json.dumps(load))


def _available_gib(node: Path) -> float:
    info = parse_meminfo(meminfo_path(node).read_text())
    assert info is not None
    return info.available_bytes / GIB


def test_the_file_follows_the_engine_and_forgets_a_dead_one(tmp_path: Path) -> None:
    now = time.time()
    refresh_meminfo(tmp_path, now)
    idle = _available_gib(tmp_path)
    _publish(tmp_path, 50 * 1024, os.getpid())
    refresh_meminfo(tmp_path, time.time())
    assert abs(idle - _available_gib(tmp_path) - 50) < 0.01
    _publish(tmp_path, 50 * 1024, 2**22 + 1)  # above pid_max: no such process
    refresh_meminfo(tmp_path, time.time())
    assert _available_gib(tmp_path) == idle
