"""What the store keeps, one frozen dataclass per kind of row (the writer's queue carries them)."""

from __future__ import annotations

from dataclasses import dataclass

OK, REFUSED, FAILED, CANCELLED = "ok", "refused", "failed", "cancelled"


@dataclass(frozen=True)
class OpRow:
    """An operation, written when it starts (no outcome) and again when it ends."""

    id: str
    op: str
    lane: str
    cluster: str
    who: str
    pid: int
    started: float
    nodes: tuple[str, ...] = ()
    ended: float | None = None
    outcome: str | None = None
    exit_code: int | None = None
    summary: str = ""


@dataclass(frozen=True)
class PhaseSpan:
    """How long one node spent in one boot phase."""

    node: str
    phase: str
    seconds: float


@dataclass(frozen=True)
class BootRow:
    """One boot of a lane on a cluster, from `boot` started to ready (or to its end)."""

    op_id: str
    lane: str
    cluster: str
    head: str
    started: float
    ended: float
    seconds: float | None  # to ready; None when it never was
    outcome: str
    phases: tuple[PhaseSpan, ...] = ()


@dataclass(frozen=True)
class LaneSample:
    """A lane's engine over one downsampling bucket: means, and the peaks worth a glance."""

    lane: str
    cluster: str
    at: float
    span_s: float
    n: int
    gen_tps: float | None = None
    prompt_tps: float | None = None
    kv_usage: float | None = None
    kv_usage_max: float | None = None
    running: float | None = None
    waiting: float | None = None
    waiting_max: float | None = None


@dataclass(frozen=True)
class NodeSample:
    """A node's GPU and memory over one downsampling bucket."""

    node: str
    at: float
    span_s: float
    n: int
    gpu_util: float | None = None
    temp_c: float | None = None
    temp_max_c: float | None = None
    power_w: float | None = None
    mem_used_mib: float | None = None
    mem_total_mib: float | None = None


@dataclass(frozen=True)
class BenchRow:
    """A bench report, indexed: where it is and its headline figures (tok/s; None: not
    measured)."""

    path: str
    lane: str
    cluster: str
    created: float
    label: str
    mode: str
    driver: str
    partial: str
    points: int
    flagged: int
    depth: int | None = None
    tg_c1: float | None = None
    pp_c1: float | None = None
    tg_c2: float | None = None
    deep: int | None = None
    tg_c1_deep: float | None = None


@dataclass(frozen=True)
class ReportWritten:
    """A bench wrote its report: the writer reads and indexes it (off the caller's loop)."""

    path: str


Row = OpRow | BootRow | LaneSample | NodeSample | BenchRow | ReportWritten
