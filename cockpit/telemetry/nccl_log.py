"""NCCL `NCCL_DEBUG=INFO` lines → records, events, and a per-rank transport summary.

NCCL prefixes its lines with `host:pid:tid [cudaDev]`, and WARN lines add `file.cc:line`:

    spark-3995:2981:2981 [0] NCCL INFO NET/IB : Using [0]rocep1s0f1:1/RoCE [RO]; OOB enp1s0f1np1:…
    node1:36754:36800 [0] misc/ibvwrap.cc:206 NCCL WARN Call to ibv_modify_qp failed ...

Lines without the prefix (`NCCL INFO Connected all rings`) are accepted too, and torch's watchdog
timeout (`[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(...)`) is recognised
wherever it appears. The summary answers the operator's question: is this rank on RoCE (which HCAs,
which GID index when NCCL printed it) or did it fall back to sockets?
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal

# Searched, not anchored: the leftmost match starts at the host prefix when there is one, so a
# vLLM process tag or other text before it is skipped.
_LINE_RE = re.compile(
    r"(?:(?P<host>[^\s:()\[\]]+):(?P<pid>\d+):(?P<tid>\d+)\s+\[(?P<dev>\d+)\]\s+)?"
    r"(?:(?P<src>[\w./-]+\.\w+:\d+)\s+)?NCCL (?P<level>INFO|WARN|ERROR|TRACE)\b\s?(?P<msg>.*)$"
)
_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass(frozen=True)
class NcclLine:
    raw: str
    level: str  # INFO | WARN | ERROR | TRACE
    message: str
    host: str | None = None
    pid: int | None = None
    tid: int | None = None
    cuda_dev: int | None = None
    source: str | None = None


def parse_nccl_line(line: str) -> NcclLine | None:
    """Split an NCCL debug line; None for anything that is not one."""
    if "NCCL " not in line:
        return None  # the cheap test first: log panes feed every line through here
    match = _LINE_RE.search(_ANSI_RE.sub("", line).strip())
    if not match:
        return None

    def num(name: str) -> int | None:
        value = match.group(name)
        return int(value) if value is not None else None

    return NcclLine(
        raw=line,
        level=match.group("level"),
        message=match.group("msg").strip(),
        host=match.group("host"),
        pid=num("pid"),
        tid=num("tid"),
        cuda_dev=num("dev"),
        source=match.group("src"),
    )


# --- events -------------------------------------------------------------------------------------


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


def _watchdog(text: str) -> WatchdogTimeout | None:
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
        if watchdog := _watchdog(line):
            return watchdog
        parsed = parse_nccl_line(line)
    else:
        parsed = line
    if parsed is None:
        return None
    msg = parsed.message
    if parsed.level in ("WARN", "ERROR"):
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


# --- per-rank transport summary -----------------------------------------------------------------


@dataclass(frozen=True)
class RankTransport:
    """One NCCL process (host:pid) as the NCCL pane shows it in a line."""

    host: str | None
    pid: int | None
    rank: int | None = None
    nranks: int | None = None
    network: str | None = None  # "IB" | "Socket" as NCCL chose it
    link: str | None = None  # "RoCE" | "IB" from the NET/IB device list
    hcas: tuple[str, ...] = ()
    gid_index: str | None = None
    ib_hca_setting: str | None = None
    socket_ifname: str | None = None
    channels_via: tuple[str, ...] = ()
    init_complete: bool = False
    warnings: int = 0
    last_warning: str | None = None
    timeout: WatchdogTimeout | None = None

    @property
    def transport(self) -> str:
        """`RoCE`, `IB`, `Socket` or `unknown`."""
        if self.network == "Socket" or (
            self.network is None and any("Socket" in via for via in self.channels_via)
        ):
            return "Socket"
        if self.network == "IB" or self.hcas:
            return self.link or "IB"
        return "unknown"

    @property
    def problem(self) -> str | None:
        """Why this rank needs the operator's eye, or None when it looks healthy."""
        if self.timeout is not None:
            return f"collective timed out ({self.timeout.op_type or 'op'}, rank {self.rank})"
        if self.transport == "Socket":
            return "NCCL fell back to Socket: no usable RoCE/IB HCA (check [nccl] hca/gid)"
        if self.warnings:
            return f"{self.warnings} NCCL warning(s): {self.last_warning}"
        return None

    @property
    def headline(self) -> str:
        """e.g. `rank 1/2 RoCE rocep1s0f1,roceP2p1s0f1 gid 3`."""
        who = f"rank {self.rank}/{self.nranks}" if self.rank is not None else "rank ?"
        parts = [who, self.transport]
        if self.hcas:
            parts.append(",".join(self.hcas))
        if self.gid_index is not None:
            parts.append(f"gid {self.gid_index}")
        if self.transport == "Socket" and self.socket_ifname:
            parts.append(self.socket_ifname)
        if not self.init_complete:
            parts.append("(init pending)")
        return " ".join(parts)


def _apply(summary: RankTransport, event: NcclEvent) -> RankTransport:
    match event:
        case NetIbDevices(devices=devices):
            links = {d.link for d in devices}
            return replace(
                summary,
                hcas=tuple(d.name for d in devices),
                link=links.pop() if len(links) == 1 else summary.link,
            )
        case NetworkChosen(network=network):
            return replace(summary, network=network)
        case EnvSetting(name="NCCL_IB_GID_INDEX", value=value):
            return replace(summary, gid_index=value)
        case EnvSetting(name="NCCL_IB_HCA", value=value):
            return replace(summary, ib_hca_setting=value)
        case EnvSetting(name="NCCL_SOCKET_IFNAME", value=value):
            return replace(summary, socket_ifname=value)
        case ChannelConnection(via=via) if via not in summary.channels_via:
            return replace(summary, channels_via=(*summary.channels_via, via))
        case InitComplete(rank=rank, nranks=nranks):
            return replace(summary, rank=rank, nranks=nranks, init_complete=True)
        case NcclWarning(text=text):
            return replace(summary, warnings=summary.warnings + 1, last_warning=text)
        case WatchdogTimeout(rank=rank):
            return replace(summary, timeout=event, rank=summary.rank if rank is None else rank)
    return summary


class TransportTracker:
    """Incremental per-process summary for a stream of (possibly merged) NCCL lines.

    Lines without a `host:pid` prefix (watchdog lines, bare samples) belong to the last process
    seen, or to an anonymous one. Not thread-safe.
    """

    def __init__(self) -> None:
        self._ranks: dict[tuple[str | None, int | None], RankTransport] = {}
        self._last: tuple[str | None, int | None] = (None, None)

    def feed(self, line: str) -> NcclEvent | None:
        parsed = parse_nccl_line(line)
        event = _watchdog(line) or (parse_nccl_event(parsed) if parsed else None)
        if event is None:
            return None
        if parsed is not None and parsed.host is not None:
            self._last = (parsed.host, parsed.pid)
        key = self._last
        current = self._ranks.get(key) or RankTransport(host=key[0], pid=key[1])
        self._ranks[key] = _apply(current, event)
        return event

    def summaries(self) -> tuple[RankTransport, ...]:
        """Per-process summaries, ordered by rank (unknown last) then host."""
        return tuple(
            sorted(
                self._ranks.values(),
                key=lambda r: (r.rank is None, r.rank or 0, r.host or "", r.pid or 0),
            )
        )
