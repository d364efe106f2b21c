"""The bench's event stream, in the style of `cockpit.events` (and built on its base).

A sweep yields `Planned` (the points), then per point `PointStarted`, `RequestProgress`s,
`BenchWarning`s and `PointFinished`, and ends with exactly one `SweepFinished` (a `Finished`).
Events round-trip through JSON lines so a remote bench host streams the same events over SSH.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter

from cockpit.bench.models import Flag, HangRecord, PointResult, PointSpec, SweepPlan
from cockpit.events import Finished, Notice, OpEvent, Planned, Severity

OP = "bench"


@dataclass(frozen=True, kw_only=True)
class SweepPlanned(Planned):
    """The plan of a bench started with a `SweepPlan` (the TUI's): what it measures, so the
    Bench pane never reads a cold or llama-benchy point against a warm built-in baseline."""

    plan: SweepPlan


@dataclass(frozen=True, kw_only=True)
class PointStarted(OpEvent):
    point: PointSpec
    index: int
    total: int


@dataclass(frozen=True, kw_only=True)
class ClientInfo(OpEvent):
    """Where the driver runs and how it reaches the engine (sent by a remote bench host too)."""

    host: str
    link: str


@dataclass(frozen=True, kw_only=True)
class LatencyMeasured(OpEvent):
    """The client-to-engine latency the driver subtracts from TTFR (engine seconds)."""

    latency_s: float
    mode: str = "api"
    point: PointSpec | None = None  # the point it was measured for (None: the whole run)


@dataclass(frozen=True, kw_only=True)
class RequestProgress(OpEvent):
    """One request of a point moved: `phase` is warmup, context or inference; tokens so far."""

    point: PointSpec
    run: int
    stream: int
    phase: str
    tokens: int
    done: bool = False


@dataclass(frozen=True, kw_only=True)
class BenchWarning(OpEvent):
    """Something the reader of the numbers must know: a flag on a point, a hang, a fallback."""

    message: str
    point: PointSpec | None = None
    flag: Flag | None = None
    hang: HangRecord | None = None


@dataclass(frozen=True, kw_only=True)
class PointFinished(OpEvent):
    result: PointResult


@dataclass(frozen=True, kw_only=True)
class SweepFinished(Finished):
    """The last event: where the report went (empty when none was written)."""

    report_json: str = ""
    report_md: str = ""


EVENT_TYPES: dict[str, type[OpEvent]] = {
    cls.__name__: cls
    for cls in (
        Planned,
        Notice,
        PointStarted,
        ClientInfo,
        LatencyMeasured,
        RequestProgress,
        BenchWarning,
        PointFinished,
        SweepFinished,
    )
}


def event_line(event: OpEvent) -> str:
    """One JSON line for the remote stream."""
    data = TypeAdapter(type(event)).dump_python(event, mode="json")
    return json.dumps({"type": type(event).__name__, **data}, separators=(",", ":"))


def parse_event_line(line: str) -> OpEvent | None:
    """An event back from `event_line`; None for lines that are not ours (banners, noise)."""
    try:
        data: Any = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("type") not in EVENT_TYPES:
        return None
    kind = EVENT_TYPES[data.pop("type")]
    return TypeAdapter(kind).validate_python(data)


def warning(message: str, **kw: Any) -> BenchWarning:
    return BenchWarning(op=OP, message=message, **kw)


__all__ = [
    "BenchWarning",
    "ClientInfo",
    "LatencyMeasured",
    "Notice",
    "Planned",
    "PointFinished",
    "PointStarted",
    "RequestProgress",
    "Severity",
    "SweepFinished",
    "SweepPlanned",
    "event_line",
    "parse_event_line",
]
