"""Immutable snapshots of the store: what a pane reads. Nothing here changes after it is built."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import NamedTuple

from cockpit.telemetry.gpu import GpuSample, MemoryView
from cockpit.telemetry.nccl_log import RankTransport
from cockpit.tui.state.inputs import RankOnNode


class NodeHealth(StrEnum):
    LIVE = "live"
    STALE = "stale"  # answered before, not lately: last values kept, with their age
    DOWN = "down"  # never answered
    WAITING = "waiting"  # not polled yet


class LanePhase(StrEnum):
    STOPPED = "stopped"
    SYNCING = "syncing"
    BOOTING = "booting"
    SERVING = "serving"
    STOPPING = "stopping"
    FAILED = "failed"


def lane_key(lane: str, cluster: str) -> str:
    """`lane@cluster`: how the store, the panes and the selection name a lane on a cluster."""
    return f"{lane}@{cluster}"


@dataclass(frozen=True)
class NodeView:
    name: str
    health: NodeHealth
    age_s: float | None  # seconds since the last good sample
    error: str | None
    gpu: GpuSample | None
    memory: MemoryView | None
    ranks: tuple[RankOnNode, ...]
    util_history: tuple[float, ...]
    retry_in_s: float | None = None


@dataclass(frozen=True)
class LaneView:
    lane: str
    cluster: str
    nodes: tuple[str, ...]
    phase: LanePhase
    percent: float | None = None
    step: str = ""  # e.g. the boot phase ("loading weights") or the sync step
    detail: str = ""  # failure reason, or a short note
    eta_s: float | None = None
    endpoint: str | None = None
    image_ok: bool | None = None  # None: not known yet (some node not sampled)
    bench_headline: str | None = None

    @property
    def key(self) -> str:
        return lane_key(self.lane, self.cluster)

    @property
    def state_text(self) -> str:
        """`serving`, `syncing 40%`, `booting loading weights 42% ETA 1m20s`, `failed: reason`."""
        parts = [self.phase.value]
        if self.phase in (LanePhase.BOOTING, LanePhase.SYNCING):
            if self.step:
                parts.append(self.step)
            if self.percent is not None:
                parts.append(f"{self.percent:.0f}%")
            if self.eta_s is not None:
                parts.append(f"ETA {fmt_duration(self.eta_s)}")
        text = " ".join(parts)
        return f"{text}: {self.detail}" if self.phase is LanePhase.FAILED and self.detail else text


@dataclass(frozen=True)
class EngineView:
    """A lane's engine, from its last two `/metrics` scrapes plus history."""

    lane_key: str
    at: float
    running: float | None
    waiting: float | None
    kv_usage: float | None  # 0..1
    pool_tokens: int | None
    pool_gib: float | None
    prefix_hit_rate: float | None
    preemptions_total: float | None
    prompt_tps: float | None
    gen_tps: float | None
    ttft_p50: float | None
    ttft_p95: float | None
    spec_acceptance: float | None
    kv_history: tuple[float, ...]
    gen_history: tuple[float, ...]
    prompt_history: tuple[float, ...]
    stalled: bool = False


class LogEntry(NamedTuple):
    """One log line of a rank (a tuple: a flood creates tens of thousands a second)."""

    seq: int
    node: str
    rank: int
    text: str
    level: str | None = None


@dataclass(frozen=True)
class BenchRow:
    """A finished bench point as the Bench pane shows it, with the lane's baseline when known."""

    lane: str
    cluster: str
    depth: int
    concurrency: int
    tg_tps: float | None
    pp_tps: float | None
    baseline_tg_tps: float | None = None
    flags: tuple[str, ...] = ()  # honesty flags (kind names)


@dataclass(frozen=True)
class OpView:
    """One operation: running (no outcome yet) or finished."""

    op: str
    lane: str
    cluster: str
    started: float
    steps: tuple[str, ...]
    current: str = ""
    fraction: float | None = None
    eta_s: float | None = None
    message: str = ""
    notices: tuple[str, ...] = ()
    ok: bool | None = None  # None while running
    summary: str = ""

    @property
    def running(self) -> bool:
        return self.ok is None


@dataclass(frozen=True)
class FleetSnapshot:
    at: float
    nodes: tuple[NodeView, ...]
    lanes: tuple[LaneView, ...]
    engines: dict[str, EngineView]
    nccl: tuple[LogEntry, ...]
    nccl_ranks: tuple[RankTransport, ...]
    logs: dict[tuple[str, int], tuple[LogEntry, ...]]
    dropped: dict[tuple[str, int], int]  # lines the feed shed per source during floods
    ops: tuple[OpView, ...]  # running first, then the last finished ones, newest first
    bench: tuple[BenchRow, ...]
    version: int = 0
    log_sources: tuple[tuple[str, int], ...] = field(default_factory=tuple)

    def lane(self, key: str) -> LaneView | None:
        return next((lane for lane in self.lanes if lane.key == key), None)


def fmt_duration(seconds: float) -> str:
    """`42s`, `3m05s`, `2h10m`: short enough for a table cell."""
    s = int(max(seconds, 0))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"
