"""CPU seconds of processes, as the benchmarks count them."""

from __future__ import annotations

import os
import resource
from pathlib import Path


def children_cpu() -> float:
    """CPU seconds of the children this process has waited for (and what they waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def process_cpu(pid: int) -> float:
    """CPU seconds of a process and of the children it reaped."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def machine_busy() -> float:
    """CPU seconds all cores have spent busy since boot (/proc/stat, iowait not counted)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")
