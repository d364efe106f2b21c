"""A node's lock as `status`, the TUI and the exporter show it: whose, for what, how fresh.

Every cockpit's lock shows, not only this one's: a lock held by someone else appeared nowhere
until an operation was refused. Its age is the node's (read with the lock, `ops.locks`) plus the
time since that read; stale is the lease's rule (`ownership.holder_check`: with this host's pids
where the caller gives them, so a lock whose holder died here reads stale at once, as its orphans
do).
"""

from __future__ import annotations

from dataclasses import dataclass

from cockpit.ops.locks import NodeLock
from cockpit.ops.ownership import Alive, holder_check, parse_ownership
from cockpit.status.probe import NodeFacts


@dataclass(frozen=True)
class LockView:
    """Who holds a node's lock (`holder` '' for an unreadable lock file), and whether the next
    operation may take it over (`stale`, why; None while it is live)."""

    holder: str
    operation: str
    lane: str
    since: float | None  # the holder's own clock: shown, never judged
    age_s: float  # since it was written or last renewed
    stale: str | None

    def line(self) -> str:
        """One line: whose lock, for what, how fresh."""
        what = f"{self.operation} {self.lane}".strip()
        who = f"{self.holder} for {what}" if self.holder else "an unreadable lock file"
        if self.stale:
            return f"locked by {who}: stale ({self.stale}), the next operation takes it over"
        return f"locked by {who} (renewed {self.age_s:.0f} s ago)"


LEASE_ONLY: Alive = holder_check("", lambda _pid: True)
"""The lease's rule alone, for a caller that knows no host's pids."""


def lock_view(
    lock: NodeLock | None, read_ago_s: float = 0.0, gone: Alive = LEASE_ONLY
) -> LockView | None:
    """`lock` as read `read_ago_s` seconds ago, or None when the node has none."""
    if lock is None:
        return None
    aged = NodeLock(lock.content, lock.age_s + max(read_ago_s, 0.0))
    stale = gone(aged)
    record = aged.record
    if record is None:
        return LockView("", "", "", None, aged.age_s, stale)
    return LockView(record.holder, record.operation, record.lane, record.since, aged.age_s, stale)


def node_lock(node: str, facts: NodeFacts, now: float, gone: Alive = LEASE_ONLY) -> LockView | None:
    """`node`'s lock as its last consistent round read it (None: it has none, or not read yet)."""
    owned = facts.owned
    if owned is None:
        return None
    return lock_view(parse_ownership(node, owned.ownership).lock, now - owned.at, gone)
