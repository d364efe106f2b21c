"""The parts of a snapshot an input can change, so that only the panes reading them repaint.

`Store.apply` says which parts an input changed; each pane names the parts it reads
(`Pane.READS`); the screen repaints a pane when one of them changed since its last repaint.
"""

from __future__ import annotations

from enum import StrEnum


class Part(StrEnum):
    NODES = "nodes"  # the node views (health, figures, containers)
    LANES = "lanes"  # the lane views (phase, image, bench headline)
    ENGINES = "engines"  # the running lanes' engine views
    NCCL = "nccl"  # the running lanes' NCCL tails and transports
    LOGS = "logs"  # the rank logs, which of them run, what was shed
    OPS = "ops"  # the running and recent operations
    BENCH = "bench"  # the bench points


ALL = frozenset(Part)
LISTED = frozenset({Part.LANES, Part.ENGINES, Part.NCCL, Part.LOGS})
"""What the containers a node lists decide besides the node's own row: the lanes' phases, which
lanes' engines and NCCL tails show, which logs still run."""
TIMED = frozenset({Part.NODES, Part.LANES, Part.OPS})
"""What moves with the wall clock alone: node ages (STALE 12s, LIVE → STALE → DOWN), a lane whose
engine stopped answering (UNRESPONSIVE, for how long), a running operation's elapsed time."""
