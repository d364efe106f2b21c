"""What a bench measures and records: points, their results, flags, hangs, the environment.

Plain frozen dataclasses; `to_json`/`from_json` (pydantic's TypeAdapter) serialise them for the
report files and for the JSON-lines stream a remote bench host sends back over SSH.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeVar

from pydantic import TypeAdapter

from cockpit.bench.method import PhaseStats

SCHEMA = "cockpit-bench-report.v1"
T = TypeVar("T")


class FlagKind(StrEnum):
    PREFILL_IN_DECODE = "prefill-in-decode"
    C2_BELOW_C1 = "c2-below-c1"
    HUNG = "hung"
    ERRORS = "errors"
    DEPTH_DIP = "depth-dip"
    NOISY = "noisy"
    IMPLAUSIBLE = "faster-than-physics"
    UNOBSERVABLE = "decode-not-observable"
    STREAM_ABOVE_TOTAL = "stream-above-total"  # no longer raised; older reports carry it
    TOKEN_MISMATCH = "token-count-mismatch"


def depth_label(depth: int) -> str:
    """A context depth as tables and plots print it: 0, 4K, 256K (a depth off the 1024 grid as
    its number)."""
    return f"{depth // 1024}K" if depth and depth % 1024 == 0 else str(depth)


@dataclass(frozen=True)
class PointSpec:
    """One bench point: prompt and response sizes at a context depth and a concurrency."""

    depth: int
    concurrency: int
    pp: int
    tg: int
    cold: bool = False

    @property
    def label(self) -> str:
        depth = f" @ d{self.depth}" if self.depth else ""
        cold = " cold" if self.cold else ""
        return f"pp{self.pp}/tg{self.tg}{depth} c{self.concurrency}{cold}"

    @property
    def warm_prefix(self) -> bool:
        """A warm point loads its context first, then sends context + prompt."""
        return self.depth > 0 and not self.cold


PERF_DEPTHS = (0, 4096, 8192)
SWEEP_DEPTHS = (16384, 65536, 131072, 262144)


@dataclass(frozen=True)
class SweepPlan:
    """What an operator asks a bench to measure: every depth at every concurrency, `runs` runs
    each, warm or cold, by one driver. Recorded in the report, so the TUI's next plan of the lane
    starts from it on any machine that reads the reports. Defaults: the seed's `bench` plan (perf at
    0/4K/8K and the 16K…256K sweep, each at c1 and c2), three runs a point, as `cockpit bench`."""

    depths: tuple[int, ...] = PERF_DEPTHS + SWEEP_DEPTHS
    concurrency: tuple[int, ...] = (1, 2)
    pp: int = 2048
    tg: int = 32
    runs: int = 3
    cold: bool = False
    driver: str = "builtin"

    @property
    def points(self) -> tuple[PointSpec, ...]:
        """Depth-major, as the tables read: each depth at each concurrency."""
        return tuple(
            PointSpec(d, c, self.pp, self.tg, self.cold)
            for d in self.depths
            for c in self.concurrency
        )

    @classmethod
    def of(cls, points: tuple[PointSpec, ...], runs: int, driver: str) -> SweepPlan | None:
        """The plan whose points are exactly `points`; None when no plan makes them (points built
        by hand: a report must not claim a plan it did not run)."""
        if not points:
            return None
        first = points[0]
        plan = cls(
            tuple(dict.fromkeys(p.depth for p in points)),
            tuple(dict.fromkeys(p.concurrency for p in points)),
            first.pp,
            first.tg,
            runs,
            first.cold,
            driver,
        )
        return plan if plan.points == points else None


@dataclass(frozen=True)
class Flag:
    """Why a point's figure must not be quoted as it stands, and how to measure it right."""

    kind: FlagKind
    message: str
    fix: str = ""


@dataclass(frozen=True)
class EngineObservation:
    """One measured batch of a point as the client and the engine's counters saw it.

    `window_s`: the decode window (earliest first token → latest last token, engine s);
    `stagger_s`: how far apart the streams' first tokens came; `prefill_tokens`: prompt tokens
    the engine computed over the batch (prefix-cache hits excluded), None when not scraped.
    """

    window_s: float
    stagger_s: float
    prefill_tokens: float | None = None
    generation_tokens: float | None = None

    @property
    def stagger_share(self) -> float:
        return self.stagger_s / self.window_s if self.window_s > 0 else 0.0


@dataclass(frozen=True)
class HangRecord:
    """A point the watchdog declared hung, with what was seen at that moment."""

    after_s: float
    action: str  # "retried" (the retry finished), "skipped"
    forensics: str


@dataclass(frozen=True)
class PointResult:
    spec: PointSpec
    inference: PhaseStats | None
    context: PhaseStats | None = None
    engine: EngineObservation | None = None
    flags: tuple[Flag, ...] = ()
    hangs: tuple[HangRecord, ...] = ()
    usage_prompt_tokens: int | None = None
    latency_ms: float | None = None  # the latency subtracted from this point's TTFR

    @property
    def skipped(self) -> bool:
        return self.inference is None

    @property
    def tg(self) -> float | None:
        stat = self.inference.tg if self.inference else None
        return stat.mean if stat else None

    @property
    def pp(self) -> float | None:
        stat = self.inference.pp if self.inference else None
        return stat.mean if stat else None

    def has(self, kind: FlagKind) -> bool:
        return any(f.kind == kind for f in self.flags)


@dataclass(frozen=True)
class Quality:
    """tool-eval-bench's score: points P of M and the N/100 score (the seed's `P/M (N/100)`)."""

    points: int | None
    max_points: int | None
    score: int | None
    extra: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        pm = f"{self.points}/{self.max_points}" if self.points is not None else "?"
        return f"{pm} ({self.score}/100)" if self.score is not None else pm


@dataclass(frozen=True)
class Environment:
    """Everything that could skew the numbers, recorded with them."""

    client_host: str
    client_link: str
    prefix_cache_mode: str
    concurrency_semantics: str
    driver: str
    endpoint: str
    model: str
    engine_image: str = ""
    recipe_hash: str = ""
    latency_mode: str = "api"
    latency_ms: float = 0.0
    time_scale: float = 1.0
    prompt_mode: str = ""
    tokenizer: str = ""


@dataclass(frozen=True)
class Report:
    label: str
    created: str  # UTC, YYYY-MM-DD_HHMMSS
    lane: str
    cluster: str
    environment: Environment
    points: tuple[PointResult, ...]
    quality: Quality | None = None
    warnings: tuple[str, ...] = ()
    baseline: str = ""  # the lane's previous report file, if any
    partial: str = ""  # why the sweep stopped early (cancelled, failed); "" for a whole sweep
    plan: SweepPlan | None = None  # what was asked, skipped points included (None: not recorded)
    schema: str = SCHEMA

    @property
    def stem(self) -> str:
        return f"{self.created}_{self.label}"

    def point(self, depth: int, concurrency: int) -> PointResult | None:
        for p in self.points:
            if p.spec.depth == depth and p.spec.concurrency == concurrency:
                return p
        return None


def to_json(value: Any) -> Any:
    """A model (or tuple of them) as JSON-ready Python data."""
    return TypeAdapter(type(value)).dump_python(value, mode="json")


def from_json(kind: type[T], data: Any) -> T:
    return TypeAdapter(kind).validate_python(data)
