"""Typed events that every operation yields; the CLI prints them, the TUI renders them.

An operation is `AsyncIterator[OpEvent]`: it yields a `Planned` first, then step and progress
events, and always ends with exactly one `Finished` (ok or not, with the exit code the CLI uses).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields
from enum import StrEnum

from cockpit.errors import EXIT_FAILED, EXIT_OK, EXIT_REFUSED
from cockpit.redact import shown


class Severity(StrEnum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


@dataclass(frozen=True, kw_only=True)
class OpEvent:
    """Base: which operation, on which lane/cluster, when."""

    op: str
    lane: str = ""
    cluster: str = ""
    ts: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        """Every text of every event goes through the redactor (secrets hidden, control and
        bidi characters escaped): the CLI, the TUI and the logs print events as they are."""
        for item in fields(self):
            value = getattr(self, item.name)
            if isinstance(value, str) and value:
                object.__setattr__(self, item.name, shown(value))


@dataclass(frozen=True, kw_only=True)
class Planned(OpEvent):
    """The whole plan, before anything changes on a node (what a confirmation shows)."""

    steps: tuple[str, ...]
    summary: str = ""


@dataclass(frozen=True, kw_only=True)
class StepStarted(OpEvent):
    step: str
    node: str | None = None


@dataclass(frozen=True, kw_only=True)
class StepFinished(OpEvent):
    step: str
    node: str | None = None
    ok: bool = True
    detail: str = ""


@dataclass(frozen=True, kw_only=True)
class Progress(OpEvent):
    """Progress of a step on a node: `done` of `total` in `unit` (total None: unknown)."""

    step: str
    node: str | None = None
    done: float = 0.0
    total: float | None = None
    unit: str = ""
    rate: float | None = None
    eta_s: float | None = None
    message: str = ""

    @property
    def fraction(self) -> float | None:
        return None if not self.total else min(1.0, self.done / self.total)


@dataclass(frozen=True, kw_only=True)
class Notice(OpEvent):
    """A warning or error worth showing; `line` is the decisive log line when there is one."""

    severity: Severity
    message: str
    node: str | None = None
    line: str = ""


@dataclass(frozen=True, kw_only=True)
class Finished(OpEvent):
    """The last event of every operation."""

    ok: bool
    summary: str
    exit_code: int = EXIT_OK

    @classmethod
    def done(cls, op: str, summary: str, **kw: str) -> Finished:
        return cls(op=op, ok=True, summary=summary, exit_code=EXIT_OK, **kw)

    @classmethod
    def failed(cls, op: str, summary: str, **kw: str) -> Finished:
        return cls(op=op, ok=False, summary=summary, exit_code=EXIT_FAILED, **kw)

    @classmethod
    def refused(cls, op: str, summary: str, **kw: str) -> Finished:
        return cls(op=op, ok=False, summary=summary, exit_code=EXIT_REFUSED, **kw)
