"""A simulated node's /proc/stat: a GB10's 20 cores, as busy as its engine keeps them."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from cockpit.telemetry.host import host_load, parse_host
from cockpit_sim.fleet.meminfo import stat_path
from cockpit_sim.fleet.procstat import (
    ENGINE_BUSY_CORES,
    GB10_CPUS,
    IDLE_BUSY_CORES,
    LOADED_BUSY_CORES,
    CpuCounters,
    refresh_stat,
)


def _cpu_pct(node: Path, cpu: CpuCounters, t0: float, seconds: float) -> float:
    """What the cockpit's probe reads between two rewrites `seconds` apart."""
    refresh_stat(node, cpu, t0, 0)
    before = parse_host(stat_path(node).read_text())
    refresh_stat(node, cpu, t0 + seconds, 0)
    load = host_load(before, t0, parse_host(stat_path(node).read_text()), t0 + seconds)
    assert load is not None and load.cpu_pct is not None
    return load.cpu_pct


def test_an_idle_node_and_a_serving_one_read_as_their_engines_keep_them(tmp_path: Path) -> None:
    cpu, now = CpuCounters(), time.time()
    idle = _cpu_pct(tmp_path, cpu, now, 10.0)
    assert abs(idle - 100 * IDLE_BUSY_CORES / GB10_CPUS) < 0.05
    load = {"ts": now + 20, "util": 50, "pid": os.getpid(), "phase": "decode"}
    (tmp_path / "gpu_load.json").write_text(json.dumps(load))
    busy = _cpu_pct(tmp_path, cpu, now + 10, 10.0)
    cores = IDLE_BUSY_CORES + ENGINE_BUSY_CORES + LOADED_BUSY_CORES * 0.5
    assert abs(busy - 100 * cores / GB10_CPUS) < 0.05


def test_the_file_is_the_kernels_shape(tmp_path: Path) -> None:
    refresh_stat(tmp_path, CpuCounters(), time.time(), 1_700_000_000)
    lines = stat_path(tmp_path).read_text().splitlines()
    assert lines[0].startswith("cpu  ") and len(lines[0].split()) == 11
    assert [line.split()[0] for line in lines[1 : GB10_CPUS + 1]] == [
        f"cpu{i}" for i in range(GB10_CPUS)
    ]
    assert "btime 1700000000" in lines
