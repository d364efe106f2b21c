"""The node's host figures beside its GPU: CPU busy share, network throughput and swap in use.

Read from the kernel's own counters (the first line of /proc/stat, /proc/net/dev, /proc/meminfo)
by the probe's slow round, as peers' monitors read them (sparkrun's `cluster monitor`): a CPU
pinned by a tokenizer or an API server, a link saturated by a model sync, or a node swapping
explain a slow lane that the GPU figures alone do not. Counters are cumulative, so a figure
needs two samples: `host_load` derives the rates between them.
"""

from __future__ import annotations

from dataclasses import dataclass

VIRTUAL_IFACES = ("lo", "docker", "veth", "br-", "virbr", "cni", "flannel", "cali", "tun", "tap")
"""Interface name prefixes that are not the node's links: loopback, bridges and container pairs
(their traffic is counted again on the physical link it leaves by)."""


@dataclass(frozen=True)
class HostSample:
    """Cumulative counters at one moment: CPU jiffies busy and in all, bytes over the links."""

    cpu_busy: int | None = None
    cpu_total: int | None = None
    rx_bytes: int | None = None
    tx_bytes: int | None = None


@dataclass(frozen=True)
class HostLoad:
    """Rates between two samples, and swap in use now."""

    cpu_pct: float | None = None
    rx_bps: float | None = None  # bytes a second, received over the node's links
    tx_bps: float | None = None
    swap_used_bytes: int | None = None


def parse_host(text: str) -> HostSample:
    """The probe's `host` section: /proc/stat's first line, then /proc/net/dev."""
    busy = total = rx = tx = None
    for line in text.splitlines():
        if line.startswith("cpu "):
            fields = [int(f) for f in line.split()[1:9] if f.isdigit()]
            if len(fields) >= 5:
                # user nice system idle iowait irq softirq steal (guest is inside user already)
                total = sum(fields)
                busy = total - fields[3] - fields[4]
        elif ":" in line:
            name, _, counters = line.partition(":")
            name = name.strip()
            values = counters.split()
            if name.startswith(VIRTUAL_IFACES) or len(values) < 9 or not values[0].isdigit():
                continue
            rx = (rx or 0) + int(values[0])
            tx = (tx or 0) + int(values[8])
    return HostSample(busy, total, rx, tx)


def host_load(
    before: HostSample | None,
    before_at: float | None,
    now: HostSample | None,
    now_at: float | None,
    swap_used_bytes: int | None = None,
) -> HostLoad | None:
    """The rates between two samples; None until there are two (or when nothing is known).
    A counter that went back (a reboot, an interface gone) gives no rate rather than a wrong one."""
    cpu = rx = tx = None
    if before is not None and now is not None and before_at is not None and now_at is not None:
        dt = now_at - before_at
        if (
            now.cpu_total is not None
            and before.cpu_total is not None
            and now.cpu_busy is not None
            and before.cpu_busy is not None
            and now.cpu_total > before.cpu_total
            and now.cpu_busy >= before.cpu_busy
        ):
            cpu = 100 * (now.cpu_busy - before.cpu_busy) / (now.cpu_total - before.cpu_total)
        if dt > 0:
            rx = _rate(before.rx_bytes, now.rx_bytes, dt)
            tx = _rate(before.tx_bytes, now.tx_bytes, dt)
    if cpu is None and rx is None and tx is None and swap_used_bytes is None:
        return None
    return HostLoad(cpu, rx, tx, swap_used_bytes)


def _rate(before: int | None, now: int | None, dt: float) -> float | None:
    if before is None or now is None or now < before:
        return None
    return (now - before) / dt


def fmt_bytes(value: float | None) -> str:
    """`1.2M`: bytes, or bytes a second, in powers of 1,024 as `free -h` and sparkrun print them."""
    if value is None:
        return "–"
    units, i = ("", "K", "M", "G", "T"), 0
    while value >= 1024 and i < len(units) - 1:
        value, i = value / 1024, i + 1
    return f"{value:.1f}{units[i]}" if i and value < 10 else f"{value:.0f}{units[i]}"
