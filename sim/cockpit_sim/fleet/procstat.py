"""Each simulated node's /proc/stat: a GB10's 20 cores, busy as its engine keeps them.

Like /proc/meminfo (`cockpit_sim.fleet.meminfo`), the file `<node dir>/proc/stat` is bind-mounted
over /proc/stat in the node's mount namespace, so `top`, a peer's monitor and the cockpit's probe
read a node's CPU where they read it on a real node, not the 2 cores of the machine that
simulates it. The fleet daemon advances its counters every second from the load the node's
engine publishes (`gpu_load.json`), and rewrites the file in place (a bind mount holds the inode).

The busy shares are assumed figures (the seed gives none): an idle DGX OS keeps a fifth of a
core busy; a running engine keeps one core spinning in its step loop (vLLM's engine core polls
the GPU), and its API server, detokeniser and NCCL proxy threads take up to two more with load.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cockpit_sim.fleet.identity import GB10_PARTS
from cockpit_sim.fleet.meminfo import rewrite_in_place, stat_path
from cockpit_sim.tools.nvidia_smi import read_load

GB10_CPUS = len(GB10_PARTS)

USER_HZ = 100  # jiffies a second, as every arm64 kernel DGX OS ships reports them
IDLE_BUSY_CORES = 0.2
ENGINE_BUSY_CORES = 1.0
LOADED_BUSY_CORES = 2.0  # more, at 100 % GPU utilisation
SYSTEM_SHARE = 0.25  # of the busy time, in the kernel (syscalls, network, page faults)
BOOT_JIFFIES = 20 * 3600 * USER_HZ  # a node that has been up for a while: counters far from 0


@dataclass
class CpuCounters:
    """Cumulative jiffies of the whole node, split across its cores when printed."""

    user: float = BOOT_JIFFIES * IDLE_BUSY_CORES * (1 - SYSTEM_SHARE)
    system: float = BOOT_JIFFIES * IDLE_BUSY_CORES * SYSTEM_SHARE
    idle: float = BOOT_JIFFIES * (GB10_CPUS - IDLE_BUSY_CORES)
    at: float | None = None
    ctxt: int = 0

    def advance(self, now: float, busy_cores: float) -> None:
        if self.at is not None and now > self.at:
            jiffies = (now - self.at) * USER_HZ
            busy = min(busy_cores, GB10_CPUS) * jiffies
            self.user += busy * (1 - SYSTEM_SHARE)
            self.system += busy * SYSTEM_SHARE
            self.idle += GB10_CPUS * jiffies - busy
            self.ctxt += int(busy * 40 + GB10_CPUS * jiffies)
        self.at = now


def busy_cores(load: dict[str, float | int | str]) -> float:
    """Cores busy for this published load (empty: no engine runs on the node)."""
    if not load:
        return IDLE_BUSY_CORES
    util = float(load.get("util", 0) or 0) / 100
    return IDLE_BUSY_CORES + ENGINE_BUSY_CORES + LOADED_BUSY_CORES * util


def render_stat(cpu: CpuCounters, boot_time: int) -> str:
    """/proc/stat as the kernel prints it: the node's line, one per core, then the counters."""

    def line(name: str, share: float) -> str:
        user, system, idle = (int(v * share) for v in (cpu.user, cpu.system, cpu.idle))
        return f"{name} {user} 0 {system} {idle} 0 0 0 0 0 0\n"

    cores = "".join(line(f"cpu{i}", 1 / GB10_CPUS) for i in range(GB10_CPUS))
    return (
        line("cpu ", 1.0)
        + cores
        + f"intr {cpu.ctxt // 2}\nctxt {cpu.ctxt}\nbtime {boot_time}\n"
        + "processes 48213\nprocs_running 1\nprocs_blocked 0\nsoftirq 0 0 0 0 0 0 0 0 0 0 0\n"
    )


def refresh_stat(node_dir: Path, cpu: CpuCounters, now: float, boot_time: int) -> None:
    """Advance the node's counters to `now` and rewrite its /proc/stat in place, in one write."""
    cpu.advance(now, busy_cores(read_load(node_dir, now)))
    rewrite_in_place(stat_path(node_dir), render_stat(cpu, boot_time).encode())
