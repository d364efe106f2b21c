"""The consumer-side recorder: the CLI runner and the TUI hand it the events and the figures they
see, and it turns them into rows for the writer. No operation knows it is recorded.

An operation's run is recorded when its first event comes (who, where, when, no outcome yet) and
again when it ends: its own `Finished` (a sub-operation's, such as the sync inside a switch, does
not end it), or, when none came, however its consumer saw it end (a signal, a cancel, an error).
A boot is read from the same `boot`, `boot/<phase>`, `ready` and `watch` steps the launch yields
from its boot tracker (whose total the ETA's `BootHistory` keeps): when each node entered and left
each phase, the head being the node that reached `ready`.
"""

from __future__ import annotations

import asyncio
import getpass
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from cockpit.errors import EXIT_REFUSED, CockpitError, InputError
from cockpit.events import Finished, LockBroken, OpEvent, StepFinished, StepStarted
from cockpit.history.downsample import Bucket, Downsampler, Reading
from cockpit.history.records import (
    CANCELLED,
    FAILED,
    OK,
    REFUSED,
    BootRow,
    LaneSample,
    NodeSample,
    OpRow,
    PhaseSpan,
    ReportWritten,
    Row,
)
from cockpit.history.settings import retention_days
from cockpit.history.writer import Writer

LANE_SPAN_S = 10.0
NODE_SPAN_S = 30.0
BOOT_PREFIX = "boot/"


def who() -> str:
    """user@host, as the nodes' locks name their holder."""
    return f"{getpass.getuser()}@{socket.gethostname()}"


def outcome_of(finished: Finished) -> str:
    if finished.ok:
        return OK
    return REFUSED if finished.exit_code == EXIT_REFUSED else FAILED


@dataclass
class _Boot:
    """One lane's boot inside a run: each node's phases as they are entered and left."""

    lane: str
    cluster: str
    started: float
    current: dict[str, tuple[str, float]] = field(default_factory=dict)  # node → (phase, since)
    spans: list[PhaseSpan] = field(default_factory=list)
    head: str = ""
    ready_at: float | None = None

    def enter(self, node: str, phase: str, at: float) -> None:
        self.leave(node, None, at)
        self.current[node] = (phase, at)
        if phase == "ready":
            self.head = node

    def leave(self, node: str, phase: str | None, at: float) -> None:
        """Close `node`'s phase (`phase` None: whichever it is in)."""
        now_in = self.current.get(node)
        if now_in is not None and phase in (None, now_in[0]):
            del self.current[node]
            self.spans.append(PhaseSpan(node, now_in[0], max(0.0, at - now_in[1])))

    def row(self, op_id: str, ended: float, outcome: str) -> BootRow:
        for node in list(self.current):
            self.leave(node, None, ended)
        ready = self.ready_at is not None and outcome == OK
        seconds = self.ready_at - self.started if ready and self.ready_at is not None else None
        return BootRow(
            op_id, self.lane, self.cluster, self.head, self.started, ended, seconds, outcome,
            tuple(self.spans),
        )  # fmt: skip


class OpRecording:
    """One top-level run of an operation, fed every event its consumer sees."""

    def __init__(self, put: Callable[[Row], object], who: str) -> None:
        self._put = put
        self._who = who
        self.row: OpRow | None = None
        self._nodes: dict[str, None] = {}
        self._boots: dict[tuple[str, str], _Boot] = {}

    @property
    def done(self) -> bool:
        return self.row is not None and self.row.ended is not None

    def observe(self, event: OpEvent) -> None:
        if self.done:
            return
        if self.row is None:
            self.row = OpRow(
                uuid.uuid4().hex, event.op, event.lane, event.cluster, self._who, os.getpid(),
                event.ts,
            )  # fmt: skip
            self._put(self.row)
        for node in (getattr(event, "node", None) or "").split(","):
            if node.strip():
                self._nodes[node.strip()] = None
        match event:
            case Finished() if event.op == self.row.op:
                report = getattr(event, "report_json", "")  # a bench's `SweepFinished`
                if report:
                    self._put(ReportWritten(report))
                self._end(event.ts, outcome_of(event), event.exit_code, event.summary)
            case StepStarted() | StepFinished():
                self._boot_step(event)
            case LockBroken():
                self._lock_broken(event)

    def _lock_broken(self, event: LockBroken) -> None:
        """A lock removed from a node is a run of its own, `break-lock`: who broke it (this
        cockpit) and whose it was (in the summary), on that node, when."""
        row = OpRow(
            uuid.uuid4().hex, "break-lock", event.lane, event.cluster, self._who, os.getpid(),
            event.ts, nodes=(event.node or "",), ended=event.ts, outcome=OK, exit_code=0,
            summary=f"{'broke' if event.forced else 'took over'} {event.holder}'s lock: "
            f"{event.message}",
        )  # fmt: skip
        self._put(row)

    def _boot_step(self, event: StepStarted | StepFinished) -> None:
        key = (event.lane, event.cluster)
        if isinstance(event, StepStarted) and event.step == "boot":
            self._boots[key] = _Boot(event.lane, event.cluster, event.ts)
            return
        boot = self._boots.get(key)
        if boot is None:
            return
        if event.step.startswith(BOOT_PREFIX) and event.node:
            phase = event.step.removeprefix(BOOT_PREFIX)
            if isinstance(event, StepStarted):
                boot.enter(event.node, phase, event.ts)
            else:
                boot.leave(event.node, phase, event.ts)
        elif isinstance(event, StepFinished) and event.step in ("ready", "watch"):
            if not event.ok:
                return
            if event.step == "ready":
                boot.ready_at = event.ts
            else:
                self._put(self._boots.pop(key).row(self._id, event.ts, OK))

    @property
    def _id(self) -> str:
        assert self.row is not None
        return self.row.id

    def end(self, outcome: str, exit_code: int | None, summary: str) -> None:
        """The run ended without its `Finished` (a signal, a cancel, an error in the consumer)."""
        if self.row is not None and not self.done:
            self._end(time.time(), outcome, exit_code, summary)

    def _end(self, at: float, outcome: str, exit_code: int | None, summary: str) -> None:
        assert self.row is not None
        for boot in self._boots.values():  # a boot still open failed with its run
            self._put(boot.row(self._id, at, CANCELLED if outcome == CANCELLED else FAILED))
        self._boots.clear()
        self.row = replace(
            self.row, nodes=tuple(self._nodes), ended=at, outcome=outcome,
            exit_code=exit_code, summary=summary,
        )  # fmt: skip
        self._put(self.row)


class Recorder:
    """What one cockpit records: its runs (by the key its consumer gives each) and the fleet's
    figures, downsampled. Cheap enough to call on the UI loop: it only queues rows."""

    def __init__(self, writer: Writer) -> None:
        self.writer = writer
        self.setting_problem: str | None = None
        self.who = who()
        self.runs: dict[object, OpRecording] = {}
        self.lanes = Downsampler(LANE_SPAN_S)
        self.nodes = Downsampler(NODE_SPAN_S)

    @classmethod
    def open(cls, path: Path | None = None) -> Recorder:
        """A recorder writing to the store at `path` (default: the user state dir's), pruned as
        the user's `[history]` setting says; a broken setting prunes nothing and is a problem."""
        from cockpit.history.store import default_path

        try:
            days, problem = retention_days(), None
        except InputError as exc:
            days, problem = None, f"{exc} (nothing pruned)"
        recorder = cls(Writer(path or default_path(), days))
        recorder.setting_problem = problem
        return recorder

    @property
    def problem(self) -> str | None:
        """Why the history is not what it should be (None: all is well)."""
        return self.setting_problem or self.writer.problem

    def put(self, row: Row) -> None:
        self.writer.put(row)

    def run(self, key: object) -> OpRecording:
        """The recording of run `key` (a new one on its first use)."""
        recording = self.runs.get(key)
        if recording is None:
            recording = self.runs[key] = OpRecording(self.put, self.who)
        return recording

    def observe(self, key: object, event: OpEvent) -> None:
        recording = self.run(key)
        recording.observe(event)
        if recording.done:
            del self.runs[key]

    def ended(self, key: object, why: str) -> None:
        """Run `key`'s consumer is done with it, whatever way; `why` when no `Finished` came."""
        recording = self.runs.pop(key, None)
        if recording is not None:
            outcome = CANCELLED if why.startswith("cancelled") else FAILED
            recording.end(outcome, None, why)

    def sample(self, lanes: Iterable[Reading], nodes: Iterable[Reading], now: float) -> None:
        """The fleet's figures at `now`; complete buckets go to the writer."""
        for reading in lanes:
            for bucket in self.lanes.add(reading):
                self.put(lane_sample(bucket))
        for reading in nodes:
            for bucket in self.nodes.add(reading):
                self.put(node_sample(bucket))
        for bucket in self.lanes.due(now):
            self.put(lane_sample(bucket))
        for bucket in self.nodes.due(now):
            self.put(node_sample(bucket))

    def close(self, timeout_s: float = 10.0) -> None:
        """Write the open buckets and what is queued; blocking (call it off the UI loop)."""
        for bucket in self.lanes.flush():
            self.put(lane_sample(bucket))
        for bucket in self.nodes.flush():
            self.put(node_sample(bucket))
        self.writer.close(timeout_s)


def lane_sample(bucket: Bucket) -> LaneSample:
    lane, cluster = bucket.key
    mean, peak = bucket.mean, bucket.peak
    return LaneSample(
        lane, cluster, bucket.at, bucket.span_s, bucket.n,
        gen_tps=mean.get("gen_tps"), prompt_tps=mean.get("prompt_tps"),
        kv_usage=mean.get("kv_usage"), kv_usage_max=peak.get("kv_usage"),
        running=mean.get("running"), waiting=mean.get("waiting"),
        waiting_max=peak.get("waiting"),
    )  # fmt: skip


def node_sample(bucket: Bucket) -> NodeSample:
    (node,) = bucket.key
    mean, peak = bucket.mean, bucket.peak
    return NodeSample(
        node, bucket.at, bucket.span_s, bucket.n,
        gpu_util=mean.get("gpu_util"), temp_c=mean.get("temp_c"), temp_max_c=peak.get("temp_c"),
        power_w=mean.get("power_w"), mem_used_mib=mean.get("mem_used_mib"),
        mem_total_mib=mean.get("mem_total_mib"),
    )  # fmt: skip


def exit_outcome(exc: BaseException) -> tuple[str, int | None, str]:
    """How a CLI run that raised ended: (outcome, exit code, summary)."""
    code = getattr(exc, "exit_code", None)
    if isinstance(exc, KeyboardInterrupt) or (isinstance(code, int) and code >= 128):
        return CANCELLED, code, str(exc) or "interrupted"
    if isinstance(exc, CockpitError):
        return (REFUSED if exc.exit_code == EXIT_REFUSED else FAILED), exc.exit_code, str(exc)
    if isinstance(exc, asyncio.CancelledError):
        return CANCELLED, None, "cancelled"
    return FAILED, None, f"{type(exc).__name__}: {exc}"


@contextmanager
def recording(recorder: Recorder, key: object = "cli") -> Iterator[OpRecording]:
    """One run recorded around a consumer that only iterates (the CLI): if it raises before
    the run's `Finished`, the exception says how the run ended."""
    run = recorder.run(key)
    try:
        yield run
    except BaseException as exc:
        run.end(*exit_outcome(exc))
        raise
    finally:
        recorder.runs.pop(key, None)
