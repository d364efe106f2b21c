"""The history's figures over a span, in a fixed number of slots: what the TUI's sparklines draw
when they reach back past the session. Read in a thread (`read_past` opens the store)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cockpit.history.store import HistoryStore

LANE_SLOTS = 20  # about the Engine and KV panes' sparkline width in the 40-column right column
NODE_SLOTS = 12  # the Nodes pane's sparkline width


@dataclass(frozen=True)
class PastFigures:
    """Per slot, oldest first; a slot with nothing recorded reads 0."""

    span_s: float
    lane: tuple[str, str] | None = None  # (lane, cluster) the engine series are of
    kv: tuple[float, ...] = ()
    gen: tuple[float, ...] = ()
    prompt: tuple[float, ...] = ()
    nodes: dict[str, tuple[float, ...]] = field(default_factory=dict)  # GPU utilisation %


def slotted(rows: Iterable[tuple[int, float | None]], slots: int) -> tuple[float, ...]:
    """(slot, value) rows into a series of `slots` values, 0 where none came. Pure."""
    values = [0.0] * slots
    for slot, value in rows:
        if 0 <= slot < slots and value is not None:
            values[slot] = float(value)
    return tuple(values)


def read_past(
    path: Path,
    lane: tuple[str, str] | None,
    nodes: Sequence[str],
    now: float,
    span_s: float,
) -> PastFigures:
    """The last `span_s` seconds of the lane's engine and the nodes' GPU utilisation."""
    store = HistoryStore.open(path)
    try:
        start = now - span_s
        series = store.lane_series(*lane, start, now, LANE_SLOTS) if lane else {}
        utils = store.node_series(start, now, NODE_SLOTS)
    finally:
        store.close()
    empty = {"kv_usage": [], "gen_tps": [], "prompt_tps": []}
    series = series or empty
    return PastFigures(
        span_s,
        lane,
        slotted(series["kv_usage"], LANE_SLOTS),
        slotted(series["gen_tps"], LANE_SLOTS),
        slotted(series["prompt_tps"], LANE_SLOTS),
        {n: slotted(utils.get(n, ()), NODE_SLOTS) for n in nodes},
    )
