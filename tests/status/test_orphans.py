"""Orphan verdicts (pure): one consistent round per node, confirmed by a round read after them."""

from __future__ import annotations

import json

from cockpit.ops.locks import LockRecord
from cockpit.ops.ownership import Alive, new_marker
from cockpit.status.orphans import OrphanWatch
from cockpit.status.probe import Asked, NodeFacts, Section

LANE, CLUSTER, NODE = "qwen3-0.6b-2x", "2nodes-dac", "dgx1"
CID = "aaaaaaaaaaaa"
LOCK = LockRecord("ops", "deck", 4242, "launch", 1.0, LANE, token="t0ken")
HOLDER: Alive = lambda _lock: None  # noqa: E731  (these rounds read no lock)


def ps(state: str = "running") -> Section:
    labels = f"cockpit.cluster={CLUSTER},cockpit.lane={LANE},cockpit.rank=0"
    row = {"ID": CID, "Names": f"cockpit-{LANE}-r0", "Image": "i", "State": state}
    return Section("ps", json.dumps({**row, "Status": "Up 1 second", "Labels": labels}), 0)


def own(marker_state: str) -> Section:
    """The node's locks and lane markers: the launch's marker, and no lock (a launch that
    holds none any more: it is gone, or it released its lock after marking the lane ready)."""
    marker = new_marker(LANE, CLUSTER, NODE, LOCK)
    marker = marker.ready() if marker_state == "ready" else marker
    return Section("own", f"{marker.file_name()}\t{marker.dumps()}", 0)


class Asks:
    """`FleetPoller.refresh` for one node: numbers the asks."""

    def __init__(self) -> None:
        self.sent = 0

    def __call__(self) -> int:
        self.sent += 1
        return self.sent


def test_a_launch_read_under_way_then_ended_before_the_look_is_never_orphaned() -> None:
    """Issue 31: a round read the launch's marker "launching"; by the time the cockpit judged
    it, the launcher had marked the lane ready, released its lock and exited, so that one round
    says orphaned: a candidate only, never shown; the round read after the ask sees the marker
    ready."""
    watch, asks = OrphanWatch(), Asks()
    facts = NodeFacts().with_frame(ps(), 1.0).with_frame(own("launching"), 1.1)
    assert watch.orphans(NODE, facts, HOLDER, asks) == {} and asks.sent == 1 and watch.pending
    # looked at again, no new round: judged once per round (no second ask)
    assert watch.orphans(NODE, facts.with_frame(Section("mem", "", 0), 1.2), HOLDER, asks) == {}
    assert asks.sent == 1
    after = facts.with_frame(Asked(1), 2.0).with_frame(ps(), 2.1)
    after = after.with_frame(own("ready"), 2.2)
    assert watch.orphans(NODE, after, HOLDER, asks) == {} and not watch.pending


def test_a_launcher_killed_is_orphaned_once_a_round_read_after_the_ask_agrees() -> None:
    watch, asks = OrphanWatch(), Asks()
    first = NodeFacts().with_frame(ps(), 1.0).with_frame(own("launching"), 1.1)
    assert watch.orphans(NODE, first, HOLDER, asks) == {}
    # a round the node read before the ask came (no `ask` line before it) confirms nothing
    early = first.with_frame(ps(), 1.5).with_frame(own("launching"), 1.6)
    assert watch.orphans(NODE, early, HOLDER, asks) == {} and asks.sent == 1
    later = early.with_frame(Asked(1), 2.0).with_frame(ps(), 2.1)
    later = later.with_frame(own("launching"), 2.2)
    (why,) = watch.orphans(NODE, later, HOLDER, asks).values()
    assert "never reached ready" in why and not watch.pending
    # a confirmed orphan that a later round finds looked after is cleared at once
    ready = later.with_frame(ps(), 3.0).with_frame(own("ready"), 3.1)
    assert watch.orphans(NODE, ready, HOLDER, asks) == {}


def test_only_a_consistent_round_is_judged() -> None:
    """The markers are judged with the container list of their own round: a list whose `own`
    section failed, or markers without a list before them, decide nothing."""
    watch, asks = OrphanWatch(), Asks()
    failed = NodeFacts().with_frame(ps(), 1.0).with_frame(Section("own", "", 2), 1.1)
    assert failed.owned is None
    alone = failed.with_frame(own("launching"), 1.2)
    assert alone.owned is None and watch.orphans(NODE, alone, HOLDER, asks) == {}
    assert asks.sent == 0
    ready = alone.with_frame(ps(), 2.0).with_frame(own("ready"), 2.1)
    assert ready.owned is not None and [r.id for r in ready.owned.containers] == [CID]
    assert watch.orphans(NODE, ready, HOLDER, asks) == {} and asks.sent == 0
