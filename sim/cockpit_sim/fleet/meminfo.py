"""Each simulated node's /proc/meminfo: a GB10's unified memory minus what its engine holds.

The file `<node dir>/proc/meminfo` is bind-mounted over /proc/meminfo in the node's mount
namespace (`cockpit_sim.fleet.identity`), so every reader on the node (`free`, a peer's script,
the cockpit's probe with bash builtins) reads it where it reads it on a real node. The fleet
daemon rewrites it every second from the load the node's engine publishes (`gpu_load.json`;
stale, absent or from a dead process reads as an idle node), in place: a bind mount holds the
inode, so a rename would leave the node reading the old file forever.
"""

from __future__ import annotations

import os
from pathlib import Path

from cockpit.plan.memory_fit import GB10_MEMORY_GIB
from cockpit_sim.tools.nvidia_smi import read_load

GIB = 1 << 30
OS_HELD_GIB = 3.4
"""What DGX OS, the Docker daemon and the page cache hold on an idle node: an assumed figure
(the seed gives none), as is PAGE_CACHE_GIB; only the GB10 total is a reported one."""
PAGE_CACHE_GIB = 2.1


def meminfo_path(node_dir: Path) -> Path:
    return node_dir / "proc" / "meminfo"


def stat_path(node_dir: Path) -> Path:
    """The node's /proc/stat (`cockpit_sim.fleet.procstat` keeps it)."""
    return node_dir / "proc" / "stat"


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
    """Rewrite the node's meminfo from its engine's current load, when it changed."""
    load = read_load(node_dir, now)
    used_mib = int(load.get("mem_used_mib", 0) or 0)
    rewrite_in_place(meminfo_path(node_dir), render_meminfo(used_mib * 1024 * 1024).encode())


def rewrite_in_place(path: Path, data: bytes) -> None:
    """`data` into `path` in place, in one write, when it differs (a bind mount holds the inode:
    a rename would leave the node reading the old file; a reader racing the write may see the
    new lines and a stale tail for an instant)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if os.pread(fd, len(data) + 1, 0) == data:
            return
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)
