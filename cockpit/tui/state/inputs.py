"""What the store is fed: typed, immutable facts from the pollers, the operations and the bench.

Every source (a live fleet over SSH, a recorded replay, an operation's event stream) reduces to
these records, so the store and the panes never know where a fact came from.
"""

from __future__ import annotations

from dataclasses import dataclass

from cockpit.events import OpEvent
from cockpit.ops.op_records import OpOnNode
from cockpit.status.lock_view import LockView
from cockpit.telemetry.gpu import GpuSample, MemoryView
from cockpit.telemetry.host import HostLoad
from cockpit.telemetry.metrics import EngineMetrics


@dataclass(frozen=True)
class RankOnNode:
    """A lane container seen on a node (from its `cockpit.*` labels), running or exited."""

    lane: str
    cluster: str
    rank: int
    running: bool = True
    exit_code: int | None = None  # an exited container's, when the node said it
    container: str = ""  # its id (a relaunch under the same name is another container)
    orphaned: str | None = None  # why no cockpit looks after it (`cockpit.ops.ownership`)
    started: bool = True  # False: created and never started (its `docker run` was cut short)


@dataclass(frozen=True)
class NodeSampled:
    """One good poll of a node: its GPU, its memory and the lane containers it holds."""

    node: str
    at: float
    gpu: GpuSample | None
    memory: MemoryView | None
    ranks: tuple[RankOnNode, ...] = ()
    images: tuple[str, ...] | None = None  # recipe image refs present here (None: not known)
    ranks_known: bool = True  # False until the node's container list came: no ranks ≠ none
    host: HostLoad | None = None  # CPU, links and swap (`telemetry.host`), from the slow round
    lock: LockView | None = None  # whoever holds the node's lock (any cockpit's)
    ops: tuple[OpOnNode, ...] = ()  # other cockpits' operations in flight recorded there


@dataclass(frozen=True)
class NodeLost:
    """A poll that failed: the node keeps its last values, marked STALE, or DOWN when `down`."""

    node: str
    at: float
    error: str
    retry_in_s: float | None = None
    down: bool = False  # the link is unreachable and a reconnect failed: not a short gap


@dataclass(frozen=True)
class EngineSampled:
    """One `/metrics` scrape of a lane's endpoint."""

    lane: str
    cluster: str
    metrics: EngineMetrics


@dataclass(frozen=True)
class RankLines:
    """New container log lines of one rank (NCCL lines are picked out of these by the store)."""

    node: str
    lane: str
    cluster: str
    rank: int
    lines: tuple[str, ...]
    at: float = 0.0
    dropped: int = 0  # lines the feed shed before these (a flood beyond what a tail can show)
    fresh: bool = False  # the first lines of a new log stream: the rank's log starts over


@dataclass(frozen=True)
class OpUpdate:
    """An event of the operation run `run`: one worker runs one top-level operation, and every
    event it yields (a switch's nested sync too) belongs to that run."""

    run: int
    event: OpEvent


@dataclass(frozen=True)
class OpEnded:
    """The worker of run `run` ended, whatever way (its Finished, an exception, a cancel):
    nothing of it stays in the running overlay. `why` is the outcome when no Finished came."""

    run: int
    why: str = "ended without an outcome"


StoreInput = NodeSampled | NodeLost | EngineSampled | RankLines | OpUpdate | OpEnded
"""Bench events (`cockpit.bench.events`) are `OpEvent`s too: finished points fill the Bench pane."""
