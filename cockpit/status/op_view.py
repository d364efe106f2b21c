"""Every cockpit's operations in flight, as `status`, the TUI and the exporter show them.

Each node lists the records of the operations working on it (`cockpit.ops.op_records`); one
operation on several nodes is one entry, with the nodes where it was seen. Its age is the
freshest node's (read with the record, by the node's clock) plus the time since that read; an
operation whose records are not renewed for a lease is stale: its cockpit is gone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from cockpit.ops.locks import LEASE
from cockpit.ops.op_records import OpOnNode, OpRecord, parse_records
from cockpit.status.probe import NodeFacts


@dataclass(frozen=True)
class OpInFlight:
    """One operation of any cockpit: its newest record, where it was seen, how fresh."""

    record: OpRecord
    seen_on: tuple[str, ...]
    age_s: float  # since its freshest record was written

    @property
    def stale(self) -> bool:
        return self.age_s >= LEASE.seconds

    def line(self) -> str:
        """One line: what, whose, since when, how far, where (and stale when it is)."""
        r = self.record
        since = datetime.fromtimestamp(r.since, UTC).strftime("%H:%M:%S UTC")
        step = f": {r.step}" if r.step else ""
        where = ", ".join(self.seen_on)
        text = f"{r.what} by {r.holder} (pid {r.pid}) since {since}{step} — on {where}"
        if self.stale:
            text += f" (stale: not renewed for {self.age_s:.0f} s, its cockpit is gone)"
        return text


def merged(seen: Iterable[tuple[str, OpOnNode, float]]) -> tuple[OpInFlight, ...]:
    """(node, record as read there, seconds since that read) → one entry per operation, oldest
    first."""
    found: dict[str, tuple[OpRecord, list[str], float]] = {}
    for node, on_node, read_ago in seen:
        age = on_node.age_s + max(read_ago, 0.0)
        record, nodes, best = found.get(on_node.record.id, (on_node.record, [], age))
        if age <= best:
            record, best = on_node.record, age
        found[on_node.record.id] = (record, [*nodes, node], best)
    ops = [OpInFlight(r, tuple(nodes), age) for r, nodes, age in found.values()]
    return tuple(sorted(ops, key=lambda op: (op.record.since, op.record.id)))


def operations(facts: Mapping[str, NodeFacts], now: float) -> tuple[OpInFlight, ...]:
    """The operations the nodes record, oldest first."""
    return merged(
        (node, on_node, now - f.ops_at)
        for node, f in facts.items()
        if f.ops is not None and f.ops_at is not None
        for on_node in parse_records(node, f.ops)
    )
