"""What an NCCL line tells: the events `parse_nccl_event` recognises (the IB/RoCE devices and the
network NCCL chose, its environment settings, channels, init completion and timings, warnings), and
torch's watchdog timeout (`[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(...)`),
recognised wherever it appears.

An NCCL line is a warning (`NcclWarning`, which the NCCL pane counts) when the one log severity
classifier (`severity`) rates it warning or worse, as the Log pane's level filter keeps it: NCCL's
`WARN` on a bare NCCL line, but the line's own level when a logger's record holds NCCL's text.
NCCL's INFO lines that tell of a failure (`transport/net_ib.cc:1024 -> 2`, the unwinding under
the WARN that told it; `Call to connect returned …, retrying`) are not warnings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from cockpit.telemetry.nccl_log import NcclLine, parse_nccl_line
from cockpit.telemetry.severity import WARNING, rank, severity


@dataclass(frozen=True)
class IbDevice:
    index: int
    name: str
    port: int
    link: str  # "RoCE" or "IB"


@dataclass(frozen=True)
class NetIbDevices:
    devices: tuple[IbDevice, ...]
    relaxed_ordering: bool
    oob_ifname: str | None
    oob_ip: str | None


@dataclass(frozen=True)
class NetIbNoDevice:
    pass


@dataclass(frozen=True)
class NetSocketDevices:
    ifnames: tuple[str, ...]


@dataclass(frozen=True)
class NetworkChosen:
    network: str  # "IB" or "Socket" (or a plugin's name)


@dataclass(frozen=True)
class EnvSetting:
    """`NCCL_SOCKET_IFNAME set to X`, `NCCL_IB_GID_INDEX set by environment to 3.` and the like."""

    name: str
    value: str


@dataclass(frozen=True)
class VirtualDevice:
    index: int
    name: str
    speed: int | None
    ndevs: int | None


@dataclass(frozen=True)
class ChannelConnection:
    channel: int
    src_rank: int
    dst_rank: int
    direction: str | None  # "send" / "receive"
    via: str  # "NET/IB/0", "NET/Socket/0", "P2P/IPC", ...


@dataclass(frozen=True)
class RingsConnected:
    pass


@dataclass(frozen=True)
class InitComplete:
    rank: int
    nranks: int
    cuda_dev: int
    nvml_dev: int | None
    bus_id: str
    comm_id: str | None


@dataclass(frozen=True)
class InitTimings:
    rank: int
    nranks: int
    total_s: float
    parts: tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class NcclWarning:
    text: str
    source: str | None
    kind: Literal["ibv", "system", "connect", "other"]


@dataclass(frozen=True)
class WatchdogTimeout:
    rank: int | None
    seq: int | None
    op_type: str | None
    timeout_ms: int | None
    ran_ms: int | None
    text: str


NcclEvent = (
    NetIbDevices
    | NetIbNoDevice
    | NetSocketDevices
    | NetworkChosen
    | EnvSetting
    | VirtualDevice
    | ChannelConnection
    | RingsConnected
    | InitComplete
    | InitTimings
    | NcclWarning
    | WatchdogTimeout
)

_IB_DEV_RE = re.compile(r"\[(\d+)\]([^\s:\[\]]+):(\d+)/(\w+)")
_IB_USING_RE = re.compile(r"NET/IB ?: Using(.*?);\s*OOB\s+([^:\s]+):([^<\s]+)")
_SOCKET_USING_RE = re.compile(r"NET/Socket ?: Using(.*)$")
_NETWORK_RE = re.compile(r"^Using network (\S+)")
_ENV_RE = re.compile(r"^(NCCL_\w+) set (?:by environment )?to (.+?)\.?$")
_VDEV_RE = re.compile(r"Made virtual device \[(\d+)\] name=(\S+)(?: speed=(\d+))?(?: ndevs=(\d+))?")
_CHANNEL_RE = re.compile(
    r"^Channel (\d+)(?:/\d+)? : (\d+)\[[^\]]*\] -> (\d+)\[[^\]]*\](?: \[(\w+)\])? via (\S+)"
)
_INIT_RE = re.compile(
    r"rank (\d+) nranks (\d+) cudaDev (\d+)(?: nvmlDev (\d+))? busId (\w+)"
    r"(?: commId (0x[0-9a-fA-F]+))?.*Init COMPLETE"
)
_TIMINGS_RE = re.compile(r"Init timings.*?rank (\d+) nranks (\d+) total ([\d.]+) \((.*)\)")
_WATCHDOG_RE = re.compile(r"(?:\[Rank (\d+)\]\s*)?Watchdog caught collective operation timeout")


def parse_watchdog(text: str) -> WatchdogTimeout | None:
    """torch's watchdog timeout, wherever it appears in `text`; None for any other text."""
    match = _WATCHDOG_RE.search(text)
    if not match:
        return None

    def field(pattern: str) -> str | None:
        found = re.search(pattern, text)
        return found.group(1) if found else None

    def num(value: str | None) -> int | None:
        return int(value) if value is not None else None

    return WatchdogTimeout(
        rank=num(match.group(1)),
        seq=num(field(r"SeqNum=(\d+)")),
        op_type=field(r"OpType=(\w+)"),
        timeout_ms=num(field(r"Timeout\(ms\)=(\d+)")),
        ran_ms=num(field(r"ran for (\d+) milliseconds")),
        text=text[match.start() :].strip(),
    )


def _warning(line: NcclLine) -> NcclWarning:
    msg = line.message
    if "ibv_" in msg:
        kind: Literal["ibv", "system", "connect", "other"] = "ibv"
    elif "unhandled system error" in msg or "system error" in msg:
        kind = "system"
    elif "operation=Connect" in msg or "connect" in msg.lower():
        kind = "connect"
    else:
        kind = "other"
    return NcclWarning(msg, line.source, kind)


def parse_nccl_event(line: str | NcclLine) -> NcclEvent | None:
    """The event an NCCL (or torch watchdog) line carries, or None."""
    if isinstance(line, str):
        if watchdog := parse_watchdog(line):
            return watchdog
        parsed = parse_nccl_line(line)
    else:
        parsed = line
    if parsed is None:
        return None
    msg = parsed.message
    if rank(severity(parsed.raw)) >= rank(WARNING):  # the one classifier, as the Log pane's filter
        return _warning(parsed)
    if match := _IB_USING_RE.search(msg):
        devices = tuple(
            IbDevice(int(i), name, int(port), link)
            for i, name, port, link in _IB_DEV_RE.findall(match.group(1))
        )
        return NetIbDevices(devices, "[RO]" in match.group(1), match.group(2), match.group(3))
    if "NET/IB : No device found" in msg or "NET/IB: No device found" in msg:
        return NetIbNoDevice()
    if match := _SOCKET_USING_RE.search(msg):
        names = tuple(re.findall(r"\[\d+\]([^\s:<]+)", match.group(1)))
        return NetSocketDevices(names)
    if match := _NETWORK_RE.search(msg):
        return NetworkChosen(match.group(1))
    if match := _ENV_RE.search(msg):
        return EnvSetting(match.group(1), match.group(2).strip())
    if match := _VDEV_RE.search(msg):
        speed, ndevs = match.group(3), match.group(4)
        return VirtualDevice(
            int(match.group(1)),
            match.group(2),
            int(speed) if speed else None,
            int(ndevs) if ndevs else None,
        )
    if match := _CHANNEL_RE.search(msg):
        return ChannelConnection(
            int(match.group(1)),
            int(match.group(2)),
            int(match.group(3)),
            match.group(4),
            match.group(5),
        )
    if msg.startswith("Connected all rings"):
        return RingsConnected()
    if match := _INIT_RE.search(msg):
        return InitComplete(
            rank=int(match.group(1)),
            nranks=int(match.group(2)),
            cuda_dev=int(match.group(3)),
            nvml_dev=int(match.group(4)) if match.group(4) else None,
            bus_id=match.group(5),
            comm_id=match.group(6),
        )
    if match := _TIMINGS_RE.search(msg):
        parts = tuple(
            (name, float(value)) for name, value in re.findall(r"(\w+) ([\d.]+)", match.group(4))
        )
        return InitTimings(int(match.group(1)), int(match.group(2)), float(match.group(3)), parts)
    return None
