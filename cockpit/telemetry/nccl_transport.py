"""The NCCL pane's per-rank transport summary, folded from a stream of NCCL lines: is this rank on
RoCE (which HCAs, which GID index when NCCL printed it) or did it fall back to sockets, did its init
complete, what did it warn of, did a collective time out?
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from cockpit.telemetry.nccl_events import (
    ChannelConnection,
    EnvSetting,
    InitComplete,
    NcclEvent,
    NcclWarning,
    NetIbDevices,
    NetworkChosen,
    WatchdogTimeout,
    parse_nccl_event,
    parse_watchdog,
)
from cockpit.telemetry.nccl_log import parse_nccl_line


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


NCCL_MARKS = ("NCCL ", "WorkNCCL(", "ProcessGroupNCCL")


def is_nccl_line(text: str) -> bool:
    """A line the tracker reads: NCCL's own (`host:pid:tid [dev] NCCL INFO …`) and torch's
    watchdog (`… timeout: WorkNCCL(…)`, c10's `ProcessGroupNCCL.cpp`), which hold no "NCCL "."""
    return "NCCL" in text and any(mark in text for mark in NCCL_MARKS)  # most lines: one test


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
        event = parse_watchdog(line) or (parse_nccl_event(parsed) if parsed else None)
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
