"""Each simulated node's /proc/meminfo: a GB10's unified memory minus what its engine holds.

The status probe reads meminfo with bash builtins (no process per sample), so no simulated tool
can answer it. Instead a node's sessions carry `COCKPIT_MEMINFO=<node dir>/proc/meminfo`, which
the probe reads in place of /proc/meminfo, and the fleet daemon rewrites that file every second
from the load the node's engine publishes (`gpu_load.json`; stale, absent or from a dead process
reads as an idle node).
"""

from __future__ import annotations

import os
from pathlib import Path

from cockpit.sim.engine.calibration import GB10_MEMORY_GIB
from cockpit.sim.tools.nvidia_smi import read_load

GIB = 1 << 30
OS_HELD_GIB = 3.4
"""What DGX OS, the Docker daemon and the page cache hold on an idle node: an assumed figure
(the seed gives none), as is PAGE_CACHE_GIB; only the GB10 total is a reported one."""
PAGE_CACHE_GIB = 2.1


def meminfo_path(node_dir: Path) -> Path:
    return node_dir / "proc" / "meminfo"


def render_meminfo(engine_bytes: int, total_bytes: int = int(GB10_MEMORY_GIB * GIB)) -> str:
    """/proc/meminfo's leading lines (kB, as the kernel prints them) for this much engine use."""
    held = min(total_bytes, engine_bytes + int(OS_HELD_GIB * GIB))
    cached = int(PAGE_CACHE_GIB * GIB)
    available = max(0, total_bytes - held)
    free = max(0, available - cached)
    rows = {
        "MemTotal": total_bytes,
        "MemFree": free,
        "MemAvailable": available,
        "Buffers": 96 * 1024 * 1024,
        "Cached": cached,
        "SwapCached": 0,
        "Active": held,
        "Inactive": cached,
        "SwapTotal": 0,
        "SwapFree": 0,
    }
    return "".join(f"{key + ':':<16}{value // 1024:>8} kB\n" for key, value in rows.items())


def refresh_meminfo(node_dir: Path, now: float) -> None:
    """Rewrite the node's meminfo from its engine's current load (atomically, when it changed)."""
    load = read_load(node_dir, now)
    used_mib = int(load.get("mem_used_mib", 0) or 0)
    text = render_meminfo(used_mib * 1024 * 1024)
    path = meminfo_path(node_dir)
    try:
        if path.read_text() == text:
            return
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".meminfo.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
