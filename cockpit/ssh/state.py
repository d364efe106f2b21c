"""Per-node link state, its reconnects spaced by `cockpit.backoff`: pure values the pool updates
and views read."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from cockpit.backoff import Backoff


class Link(StrEnum):
    """Where a node's single SSH connection stands."""

    IDLE = "idle"  # never opened yet, or closed on purpose
    CONNECTING = "connecting"
    CONNECTED = "connected"
    UNREACHABLE = "unreachable"


@dataclass(frozen=True)
class NodeState:
    """Link state of one node. Times: `down_since` is wall clock (for display),
    `retry_at` is monotonic (before it, a new attempt fails fast instead of waiting again)."""

    link: Link = Link.IDLE
    error: str | None = None
    down_since: float | None = None
    failures: int = 0
    retry_at: float = 0.0

    def connecting(self) -> NodeState:
        return replace(self, link=Link.CONNECTING)

    def connected(self) -> NodeState:
        return NodeState(Link.CONNECTED)

    def failed(self, now: float, mono: float, error: str, backoff: Backoff) -> NodeState:
        """One more failed attempt; an ongoing outage keeps its start time."""
        failures = self.failures + 1
        return NodeState(
            Link.UNREACHABLE,
            error,
            self.down_since if self.down_since is not None else now,
            failures,
            mono + backoff.delay(failures),
        )

    def retry_now(self) -> NodeState:
        """The next attempt may start at once (its failures still count for the next delay)."""
        return replace(self, retry_at=0.0)

    def lost(self, now: float, error: str) -> NodeState:
        """The open connection dropped: the next use reconnects at once (no backoff yet)."""
        return NodeState(Link.UNREACHABLE, error, now, 0, 0.0)
