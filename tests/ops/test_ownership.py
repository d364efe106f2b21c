"""Lane markers and locks on a node → whether a lane's containers are orphaned (pure)."""

from __future__ import annotations

from cockpit.ops.locks import LockRecord, NodeLock
from cockpit.ops.ownership import (
    LaneMarker,
    Ownership,
    holder_check,
    new_marker,
    orphan_reason,
    parse_ownership,
)

LANE = "qwen3-0.6b-2x"
LOCK = LockRecord("op", "deck", 4242, "launch", 1000.0, lane=LANE, token="t0ken")


def listing(*records: tuple[str, str]) -> str:
    return "".join(f"{name}\t{content}\n" for name, content in records)


def test_the_listing_is_parsed_for_this_node_only() -> None:
    mine = new_marker(LANE, "2nodes-dac", "dgx1", LOCK)
    theirs = new_marker(LANE, "2nodes-dac", "dgx2", LOCK)
    text = listing(("dgx1.lock", f"2000\t{LOCK.dumps()}"), ("dgx2.lock", "0\t{}"),
                   (mine.file_name(), mine.dumps()), (theirs.file_name(), theirs.dumps()),
                   ("dgx1.junk.json", "not json"))  # fmt: skip
    owned = parse_ownership("dgx1", text)
    assert owned.lock == NodeLock(LOCK.dumps(), 2.0) and owned.markers == {LANE: mine}
    assert mine.file_name() == "dgx1.qwen3-0.6b-2x.json"
    assert LaneMarker.loads(mine.ready().dumps()) == mine.ready()


def test_orphan_rules() -> None:
    alive = holder_check(local_host="deck", pid_alive=lambda pid: True)
    dead = holder_check(local_host="deck", pid_alive=lambda pid: False)
    launching = new_marker(LANE, "2nodes-dac", "dgx1", LOCK)
    held = NodeLock(LOCK.dumps(), 1.0)
    under_way = Ownership(held, {LANE: launching})
    assert orphan_reason(LANE, under_way, alive) is None
    gone = orphan_reason(LANE, under_way, dead) or ""
    assert "never reached ready and is gone" in gone and "op@deck (pid 4242)" in gone
    no_lock = orphan_reason(LANE, Ownership(None, {LANE: launching}), alive) or ""
    assert "holds no lock" in no_lock
    other = LockRecord("op", "deck", 4242, "launch", 1000.0, lane=LANE, token="another")
    assert "holds no lock" in (
        orphan_reason(LANE, Ownership(NodeLock(other.dumps(), 1.0), {LANE: launching}), alive) or ""
    )
    assert orphan_reason(LANE, Ownership(None, {LANE: launching.ready()}), dead) is None
    assert "no launch record" in (orphan_reason(LANE, Ownership(), alive) or "")
    assert orphan_reason(LANE, Ownership(held), alive) is None  # an operation holds it now
    unrenewed = Ownership(NodeLock(LOCK.dumps(), 61.0), {LANE: launching})
    elsewhere = holder_check(local_host="elsewhere", pid_alive=lambda pid: True)
    assert "not renewed for 61 s" in (orphan_reason(LANE, unrenewed, elsewhere) or "")
