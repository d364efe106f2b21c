"""Immutable snapshots of the store: what a pane reads. Nothing here changes after it is built."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import NamedTuple

from cockpit.errors import EXIT_REFUSED
from cockpit.ops.op_records import OpOnNode
from cockpit.ops.ownership import stop_fix
from cockpit.status.lock_view import LockView
from cockpit.status.op_view import OpInFlight, merged
from cockpit.telemetry.boot import BootState
from cockpit.telemetry.gpu import GpuSample, MemoryView
from cockpit.telemetry.host import HostLoad
from cockpit.telemetry.metrics import Quantiles
from cockpit.telemetry.nccl_transport import RankTransport
from cockpit.telemetry.severity import Severity
from cockpit.telemetry.slo import DEFAULT_SLO, Goodput, Slo
from cockpit.tui.state.inputs import RankOnNode


class NodeHealth(StrEnum):
    LIVE = "live"
    STALE = "stale"  # a short gap: last values kept, greyed, with their age
    DOWN = "down"  # unreachable (reconnects fail, or no answer for long): no figures shown
    WAITING = "waiting"  # not polled yet


class LanePhase(StrEnum):
    STOPPED = "stopped"
    SYNCING = "syncing"
    BOOTING = "booting"
    SERVING = "serving"
    STOPPING = "stopping"
    FAILED = "failed"
    UNRESPONSIVE = "unresponsive"  # every rank runs, the engine answered before, not lately
    UNKNOWN = "unknown"  # a node of the lane cannot tell what it runs


_DETAILED = (LanePhase.FAILED, LanePhase.UNRESPONSIVE, LanePhase.UNKNOWN)


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
    ranks_known: bool = True  # its container list came (a first GPU sample comes before it)
    host: HostLoad | None = None
    lock: LockView | None = None  # whoever holds its lock, as last read
    ops: tuple[OpOnNode, ...] = ()  # other cockpits' operations recorded there, as last read


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
    live: bool = False  # a container of the lane runs (what the lane-scoped panes follow)
    note: str = ""  # beside any state: e.g. "dgx7 unreachable"
    orphaned: str = ""  # why its running containers have no cockpit ("dgx1: ..."), or ""

    @property
    def stop_fix(self) -> str:
        """The command that stops the lane wherever it runs (what `s` runs)."""
        return stop_fix(self.lane)

    @property
    def key(self) -> str:
        return lane_key(self.lane, self.cluster)

    @property
    def state_text(self) -> str:
        """`serving`, `syncing 40%`, `booting loading weights 42% ETA 1m20s`, `failed: reason`."""
        parts = [self.phase.value]
        if self.phase in (LanePhase.BOOTING, LanePhase.SYNCING, LanePhase.STOPPING):
            if self.step:
                parts.append(self.step)
            if self.percent is not None:
                parts.append(f"{self.percent:.0f}%")
            if self.eta_s is not None:
                parts.append(f"ETA {fmt_duration(self.eta_s)}")
        text = " ".join(parts)
        if self.phase in _DETAILED and self.detail:
            text = f"{text}: {self.detail}"
        text = f"ORPHANED · {text}" if self.orphaned else text  # first: a cut cell keeps it
        return f"{text} · {self.note}" if self.note else text


@dataclass(frozen=True)
class Hint:
    """One piece of advice: a condition seen on a lane's engine or a node, and what changes it."""

    rule: str  # kv_preemption, output_truncation, queue_backlog, prefix_caching_off, gpu_thermal
    subject: str  # the lane key or the node
    title: str  # a few words, for the Engine pane's title
    text: str  # one line naming the recipe field or the key that changes it


@dataclass(frozen=True)
class EngineView:
    """A lane's engine: rates from its last two `/metrics` scrapes; latency quantiles, finish
    reasons, goodput and recent preemptions over its scrapes of the last `window_s` seconds."""

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
    spec_acceptance: float | None
    kv_history: tuple[float, ...]
    gen_history: tuple[float, ...]
    prompt_history: tuple[float, ...]
    stalled: bool = False
    window_s: float | None = None
    ttft: Quantiles | None = None  # server-side: from the request's arrival at the engine
    tpot: Quantiles | None = None  # per request: decode time / (output tokens - 1)
    itl: Quantiles | None = None  # per token
    queue: Quantiles | None = None
    prefill: Quantiles | None = None
    decode: Quantiles | None = None
    e2e: Quantiles | None = None
    finished: tuple[tuple[str, float], ...] = ()  # (finished_reason, requests), most first
    finished_per_s: float | None = None
    goodput: Goodput | None = None
    slo: Slo = DEFAULT_SLO
    preemptions_recent: float | None = None
    backlog_s: float | None = None  # how long more requests have waited than run, so far
    prefix_caching: bool | None = None
    advice: tuple[Hint, ...] = ()  # the advisor's hints that hold for this lane now


class LogEntry(NamedTuple):
    """One log line of a rank (a tuple: a flood creates tens of thousands a second)."""

    seq: int
    node: str
    rank: int
    text: str  # as the container wrote it (redacted, control characters escaped)
    level: Severity | None = None  # `cockpit.telemetry.severity`: what paints and filters it
    ts: str = ""  # docker's RFC 3339 time of the line, "" when the stream had none
    access: bool = False  # a routine access line (`routine_access`): folded by default


class LogSource(NamedTuple):
    """Whose log: a rank of a lane (two lanes' rank 0 on one node are two sources)."""

    lane: str  # lane key, lane@cluster
    node: str
    rank: int


@dataclass(frozen=True)
class RankNccl:
    """One NCCL process of a lane's rank, as the NCCL pane lists it."""

    node: str
    rank: int
    transport: RankTransport


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
    tg_std: float | None = None  # spread over the runs (meaningful only when runs > 1)
    runs: int = 1
    mode: str = ""  # "" a warm built-in sweep (what baselines measure), else COLD, the driver


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
    run: int = 0  # the worker that runs it
    step: str = ""  # the raw name of the step running now ("transfer", "boot/loading weights")
    sub: str = ""  # the sub-operation that step belongs to ("sync" inside a switch), or ""
    node: str | None = None  # the node the last error named: where to read the failure
    exit_code: int | None = None

    @property
    def running(self) -> bool:
        return self.ok is None

    @property
    def refused(self) -> bool:
        return self.exit_code == EXIT_REFUSED


@dataclass(frozen=True)
class FleetSnapshot:
    at: float
    nodes: tuple[NodeView, ...]
    lanes: tuple[LaneView, ...]
    engines: dict[str, EngineView]  # lanes with a running container only
    nccl: dict[str, tuple[LogEntry, ...]]  # lane key → its ranks' merged NCCL tail
    nccl_ranks: dict[str, tuple[RankNccl, ...]]  # lane key → one line per NCCL process
    logs: dict[LogSource, tuple[LogEntry, ...]]  # kept after a container is gone
    dropped: dict[LogSource, int]  # lines the feed shed per source during floods
    ops: tuple[OpView, ...]  # running first, then the last finished ones, newest first
    bench: tuple[BenchRow, ...]
    version: int = 0
    log_sources: tuple[LogSource, ...] = field(default_factory=tuple)
    live_sources: frozenset[LogSource] = frozenset()  # sources whose container runs
    hints: tuple[tuple[int, Hint], ...] = ()  # (seq, hint) at each onset, newest last
    access: dict[LogSource, int] = field(default_factory=dict)  # access lines in each log
    boots: dict[str, BootState] = field(default_factory=dict)  # lane key → its head's boot log

    def lane(self, key: str) -> LaneView | None:
        return next((lane for lane in self.lanes if lane.key == key), None)

    def others(self) -> tuple[OpInFlight, ...]:
        """Other cockpits' operations in flight, as the nodes record them (one per operation)."""
        return merged((n.name, op, n.age_s or 0.0) for n in self.nodes for op in n.ops)

    def launching(self) -> OpView | None:
        """The newest running launch or switch: the lane whose boot the Log pane follows."""
        return next((op for op in self.ops if op.running and op.op in _LAUNCHES), None)

    def focus_lane(self, selected: str | None) -> str | None:
        """The lane the lane-scoped panes follow: the selected one while a container of it runs
        (or it is being launched), else the first serving lane, else the first live one."""
        launching = self.launching()
        chosen = self.lane(selected) if selected else None
        if chosen is not None and (
            chosen.live or (launching and lane_key(launching.lane, launching.cluster) == selected)
        ):
            return chosen.key
        serving = [lane for lane in self.lanes if lane.phase is LanePhase.SERVING]
        live = [lane for lane in self.lanes if lane.live]
        return next((lane.key for lane in (*serving, *live)), None)

    def log_for(self, selected: str | None) -> LogSource | None:
        """The log the Log pane shows when the operator has not picked one: the lane being
        launched (its failing rank once an error names a node, else its head); the selected
        lane's head while it runs; the failing rank of the selected lane's failed launch (kept
        after the rollback removed the container); the first serving lane's head."""
        launching = self.launching()
        if launching is not None:
            key = lane_key(launching.lane, launching.cluster)
            return self._source(key, launching.node, live=False)
        chosen = self.lane(selected) if selected else None
        if chosen is not None and chosen.live:
            return self._source(chosen.key, None)
        ended = [op for op in self.ops if not op.running]
        failed = next(
            (op for op in ended if chosen and lane_key(op.lane, op.cluster) == chosen.key), None
        )
        if failed is not None and failed.op in _LAUNCHES and failed.ok is False and failed.node:
            key = lane_key(failed.lane, failed.cluster)
            return self._source(key, failed.node, live=False)
        focus = self.focus_lane(selected)
        return self._source(focus, None) if focus else None

    def _source(self, key: str, node: str | None, live: bool = True) -> LogSource | None:
        """The lane's source on `node` (None: its lowest rank, the head first), among the live
        ones, or among every kept one when not `live`."""
        pool = self.live_sources if live else (*self.live_sources, *self.logs)
        found = sorted({s for s in pool if s.lane == key and node in (None, s.node)})
        return found[0] if found else None


_LAUNCHES = ("launch", "switch")


def fmt_duration(seconds: float) -> str:
    """`42s`, `3m05s`, `2h10m`: short enough for a table cell."""
    s = int(max(seconds, 0))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"
