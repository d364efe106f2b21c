"""Which running lane containers are orphaned, told only when two rounds read apart agree.

ORPHANED offers a stop, so a stale read must never show it. A verdict is taken from one
consistent round of a node (`probe.OwnRound`: its container list, then its locks and lane
markers) and the holder's liveness judged when that round is looked at; it is a candidate
until a later round, read on the node after the cockpit asked for it (the ask is sent after the
candidate was judged), says the same. A launch that reached ready and ended between the first
round's read and the liveness check is then seen ready in the second round, and its lane is
never shown orphaned; a launcher killed -9 leaves its lock and marker as they were, and the
second round confirms it. Clearing a verdict needs no confirmation: it offers nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from cockpit.ops.ownership import Alive, orphan_reason, parse_ownership
from cockpit.status.probe import NodeFacts, OwnRound
from cockpit.telemetry.docker_out import lane_of

Orphans = Mapping[str, str]
"""Container id → why no cockpit looks after it (only the confirmed ones)."""


def round_orphans(node: str, owned: OwnRound, gone: Alive) -> dict[str, str]:
    """The running lane containers of one round that its locks and markers leave unowned."""
    ownership = parse_ownership(node, owned.ownership)
    out = {}
    for row in owned.containers:
        label = lane_of(row.labels)
        if label is None:
            continue
        why = orphan_reason(label.lane, ownership, gone)
        if why is not None:
            out[row.id] = why
    return out


@dataclass
class _NodeVerdicts:
    judged_at: float | None = None  # the `at` of the last round judged
    candidates: dict[str, str] = field(default_factory=dict)
    need: int = 0  # the ask a confirming round must have been read after
    confirmed: dict[str, str] = field(default_factory=dict)


class OrphanWatch:
    """The confirmed orphans of each node, judged once per round (not at every look)."""

    def __init__(self) -> None:
        self._nodes: dict[str, _NodeVerdicts] = {}

    @property
    def pending(self) -> bool:
        """Some node has a verdict still waiting for its confirming round."""
        return any(state.candidates for state in self._nodes.values())

    def orphans(self, node: str, facts: NodeFacts, gone: Alive, ask: Callable[[], int]) -> Orphans:
        """`node`'s confirmed orphans after its latest round; `ask` asks the node for a round
        read from now on and returns its number (`FleetPoller.refresh`)."""
        state = self._nodes.setdefault(node, _NodeVerdicts())
        owned = facts.owned
        if owned is None or owned.at == state.judged_at:
            return dict(state.confirmed)
        state.judged_at = owned.at
        found = round_orphans(node, owned, gone)
        if state.need and owned.asked >= state.need:
            confirmed = {c: why for c, why in found.items() if c in state.candidates}
            state.candidates, state.need = {}, 0
        else:
            confirmed = {c: why for c, why in found.items() if c in state.confirmed}
        state.confirmed = confirmed
        fresh = {c: why for c, why in found.items() if c not in confirmed}
        if fresh.keys() - state.candidates.keys():
            state.need = ask()  # read after this verdict: a round that can confirm it
        state.candidates = fresh
        if not fresh:
            state.need = 0
        return dict(confirmed)
