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

from cockpit.errors import EXIT_REFUSED
from cockpit.events import Finished, OpEvent, Planned
from cockpit.tui.state.views import LaneView

if TYPE_CHECKING:
    from cockpit.bench.models import SweepPlan


@dataclass(frozen=True)
class LaneTarget:
    lane: str
    cluster: str


class Operations(Protocol):
    def launch(self, target: LaneTarget) -> AsyncIterator[OpEvent]: ...
    def sync_launch(self, target: LaneTarget) -> AsyncIterator[OpEvent]: ...
    def stop(self, target: LaneTarget) -> AsyncIterator[OpEvent]: ...
    def sync(self, target: LaneTarget) -> AsyncIterator[OpEvent]: ...
    def sync_model(self, target: LaneTarget) -> AsyncIterator[OpEvent]: ...
    def switch(self, target: LaneTarget) -> AsyncIterator[OpEvent]: ...
    def bench(self, target: LaneTarget, sweep: SweepPlan) -> AsyncIterator[OpEvent]: ...
    def last_bench_plan(self, target: LaneTarget) -> SweepPlan | None:
        """The lane's last plan that outlives the session (blocking: called in a thread)."""
        ...


@dataclass(frozen=True)
class Fix:
    """An operation that mends a refusal: what the TUI's `fix` key runs."""

    op: str  # an `Operations` method
    target: LaneTarget
    does: str  # for the refusal's notice: "press F to <does>"


def fix_for(finished: Finished, failed_checks: set[str]) -> Fix | None:
    """The fix of a refused operation when it is an operation itself: a launch refused only
    because the image is missing (or another id) on some nodes is mended by syncing it first."""
    if finished.ok or finished.exit_code != EXIT_REFUSED or not finished.lane:
        return None
    if finished.op == "launch" and failed_checks == {"image"}:
        target = LaneTarget(finished.lane, finished.cluster or "")
        return Fix("sync_launch", target, "sync the image, then launch")
    return None


def confirm_warning(planned: Planned, lane: LaneView | None) -> str:
    """What the confirmation must say before "Run it": a launch of a lane the nodes report
    running will be refused by its preflight."""
    if planned.op == "launch" and lane is not None and lane.live:
        return (
            f"{lane.key} is {lane.state_text} already: its preflight will refuse a second "
            "launch (s stops it first; w switches lanes)"
        )
    return ""
