"""Typed events that every operation yields; the CLI prints them, the TUI renders them.

An operation is `AsyncIterator[OpEvent]`: it yields a `Planned` first, then step and progress
events, and always ends with exactly one `Finished` (ok or not, with the exit code the CLI uses).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, is_dataclass, replace
from enum import Enum, StrEnum
from typing import Any

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
        bidi characters escaped), the texts of what it carries too (a bench warning's flag and
        hang forensics, a finished point's flags): the CLI, the TUI and the logs print events
        as they are."""
        for item in fields(self):
            value = getattr(self, item.name)
            safe = _shown_in(value)
            if safe is not value:
                object.__setattr__(self, item.name, safe)


def _shown_in(value: Any) -> Any:
    """`value` with every text in it as `shown` prints it: the same object when none changes.
    Enum members (a flag's kind) are names, not texts: left as they are."""
    if isinstance(value, Enum):
        return value
    if isinstance(value, str):
        safe = shown(value)
        return value if safe == value else safe
    if isinstance(value, tuple):
        items = tuple(_shown_in(v) for v in value)
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, Mapping):
        pairs = {k: _shown_in(v) for k, v in value.items()}
        return value if all(pairs[k] is v for k, v in value.items()) else pairs
    if is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for item in fields(value):
            old = getattr(value, item.name)
            if item.init and (new := _shown_in(old)) is not old:
                changes[item.name] = new
        return replace(value, **changes) if changes else value
    return value


@dataclass(frozen=True, kw_only=True)
class Planned(OpEvent):
    """The whole plan, before anything changes on a node (what a confirmation shows)."""

    steps: tuple[str, ...]
    summary: str = ""
    memory: str = ""  # a launch's memory fit per rank, as read on its nodes ("": not read)


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
    check: str = ""  # the preflight check that failed ("image", "memory", …), for a fix key


@dataclass(frozen=True, kw_only=True)
class LockBroken(Notice):
    """A node's lock this operation removed, stale or broken on request (`--break-lock`): a
    warning like any notice, and a row of the history (who broke whose)."""

    holder: str  # user@host whose lock it was, or what the file was when it was no record
    forced: bool = False  # broken on request, not stale


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
