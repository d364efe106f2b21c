"""Host figures (CPU, links, swap) from the kernel's counters, on a GB10's texts and this host's."""

from __future__ import annotations

from pathlib import Path

from cockpit.telemetry.gpu import parse_meminfo
from cockpit.telemetry.host import HostSample, fmt_bytes, host_load, parse_host

NET_DEV = """\
Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 8552984704 7111317    0    0    0     0          0         0 8552984704 7111317    0    0    0     0       0          0
enP7s7: 1000 10    0    0    0     0          0         0 2000 20    0    0    0     0       0          0
enp1s0f0np0: 5000000 4000    0    0    0     0          0         0 7000000 5000    0    0    0     0       0          0
docker0: 999999 99    0    0    0     0          0         0 999999 99    0    0    0     0       0          0
vethab12cd: 888888 88    0    0    0     0          0         0 888888 88    0    0    0     0       0          0
"""
STAT = "cpu  4705 356 584 3699 23 23 0 0 0 0\ncpu0 1393280 32966 572056 13343292 6130 0 17875 0 23933 0\n"


def test_the_first_stat_line_and_the_physical_links_are_counted() -> None:
    sample = parse_host(STAT.splitlines()[0] + "\n" + NET_DEV)
    assert sample.cpu_total == 4705 + 356 + 584 + 3699 + 23 + 23
    assert sample.cpu_busy == sample.cpu_total - 3699 - 23  # idle and iowait are not busy
    assert (sample.rx_bytes, sample.tx_bytes) == (5001000, 7002000)  # not lo, docker0, veth


def test_rates_need_two_samples_and_a_counter_that_went_back_gives_none() -> None:
    before = HostSample(cpu_busy=100, cpu_total=1000, rx_bytes=0, tx_bytes=1024)
    now = HostSample(cpu_busy=350, cpu_total=2000, rx_bytes=2 * 1024**2, tx_bytes=1024)
    assert host_load(None, None, now, 10.0) is None
    load = host_load(before, 8.0, now, 10.0, swap_used_bytes=0)
    assert load is not None
    assert load.cpu_pct == 25.0 and load.rx_bps == 1024**2 and load.tx_bps == 0
    assert load.swap_used_bytes == 0
    rebooted = HostSample(cpu_busy=5, cpu_total=50, rx_bytes=10, tx_bytes=10)
    gone = host_load(now, 10.0, rebooted, 12.0, swap_used_bytes=None)
    assert gone is None


def test_swap_in_use_comes_from_meminfo() -> None:
    text = "MemTotal: 125536000 kB\nMemAvailable: 100000000 kB\nSwapTotal: 16777212 kB\n"
    assert parse_meminfo(text + "SwapFree: 15728636 kB\n").swap_used_bytes == 1048576 * 1024  # type: ignore[union-attr]
    assert parse_meminfo(text).swap_used_bytes is None  # type: ignore[union-attr]


def test_this_hosts_own_counters_parse() -> None:
    """The real kernel's texts, as the probe reads them on a node."""
    stat = Path("/proc/stat").read_text().splitlines()[0]
    sample = parse_host(stat + "\n" + Path("/proc/net/dev").read_text())
    assert sample.cpu_total and sample.cpu_busy is not None and sample.cpu_busy <= sample.cpu_total


def test_sizes_print_as_free_h_does() -> None:
    assert [fmt_bytes(v) for v in (None, 0, 512, 1536, 15 * 1024, 3.5 * 1024**3)] == [
        "–", "0", "512", "1.5K", "15K", "3.5G"
    ]  # fmt: skip
