"""What the store is fed: typed, immutable facts from the pollers, the operations and the bench.

Every source (a live fleet over SSH, a recorded replay, an operation's event stream) reduces to
these records, so the store and the panes never know where a fact came from.
"""

from __future__ import annotations

from dataclasses import dataclass

from cockpit.ops.events import OpEvent
from cockpit.telemetry.gpu import GpuSample, MemoryView
from cockpit.telemetry.metrics import EngineMetrics


@dataclass(frozen=True)
class RankOnNode:
    """A lane container seen on a node (from its `cockpit.*` labels)."""

    lane: str
    cluster: str
    rank: int
    running: bool = True


@dataclass(frozen=True)
class NodeSampled:
    """One good poll of a node: its GPU, its memory and the lane containers it runs."""

    node: str
    at: float
    gpu: GpuSample | None
    memory: MemoryView | None
    ranks: tuple[RankOnNode, ...] = ()
    images: tuple[str, ...] | None = None  # recipe image refs present here (None: not known)


@dataclass(frozen=True)
class NodeLost:
    """A poll that failed: the node keeps its last values, marked STALE or DOWN."""

    node: str
    at: float
    error: str
    retry_in_s: float | None = None


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


StoreInput = NodeSampled | NodeLost | EngineSampled | RankLines | OpEvent
"""Bench events (`cockpit.bench.events`) are `OpEvent`s too: finished points fill the Bench pane."""
