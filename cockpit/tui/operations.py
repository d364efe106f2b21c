"""Lane operations as the TUI sees them: async generators of `OpEvent`s, started by a key.

`Operations` is what the app is given (the live fleet's ops, or a test double); `LaneTarget` is
the selected lane, and a bench's `SweepPlan` what its editor made. Each call returns a fresh
generator whose first event is `Planned` (nothing has changed on a node yet), which the
confirmation screen shows before the rest runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from cockpit.ops.events import OpEvent

if TYPE_CHECKING:
    from cockpit.bench.models import SweepPlan


@dataclass(frozen=True)
class LaneTarget:
    lane: str
    cluster: str


class Operations(Protocol):
    def launch(self, target: LaneTarget) -> AsyncIterator[OpEvent]: ...
    def stop(self, target: LaneTarget) -> AsyncIterator[OpEvent]: ...
    def sync(self, target: LaneTarget) -> AsyncIterator[OpEvent]: ...
    def switch(self, target: LaneTarget) -> AsyncIterator[OpEvent]: ...
    def bench(self, target: LaneTarget, sweep: SweepPlan) -> AsyncIterator[OpEvent]: ...
    def last_bench_plan(self, target: LaneTarget) -> SweepPlan | None:
        """The lane's last plan that outlives the session (blocking: called in a thread)."""
        ...
