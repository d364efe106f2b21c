"""The TUI's state: typed inputs, a bounded store, immutable snapshots the panes read."""

from cockpit.tui.state.inputs import (
    EngineSampled,
    NodeLost,
    NodeSampled,
    RankLines,
    RankOnNode,
    StoreInput,
)
from cockpit.tui.state.store import Store
from cockpit.tui.state.views import FleetSnapshot, LanePhase, LaneView, NodeHealth

__all__ = [
    "EngineSampled",
    "FleetSnapshot",
    "LanePhase",
    "LaneView",
    "NodeHealth",
    "NodeLost",
    "NodeSampled",
    "RankLines",
    "RankOnNode",
    "Store",
    "StoreInput",
]
