"""Lane markers and locks on a node → whether a lane's containers are orphaned (pure)."""

from __future__ import annotations

from cockpit.ops.locks import LockRecord
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
    text = listing(("dgx1.lock", LOCK.dumps()), ("dgx2.lock", "{}"),
                   (mine.file_name(), mine.dumps()), (theirs.file_name(), theirs.dumps()),
                   ("dgx1.junk.json", "not json"))  # fmt: skip
    owned = parse_ownership("dgx1", text)
    assert owned.lock == LOCK and owned.markers == {LANE: mine}
    assert mine.file_name() == "dgx1.qwen3-0.6b-2x.json"
    assert LaneMarker.loads(mine.ready().dumps()) == mine.ready()


def test_orphan_rules() -> None:
    alive = holder_check(now=1001.0, local_host="deck", pid_alive=lambda pid: True)
    dead = holder_check(now=1001.0, local_host="deck", pid_alive=lambda pid: False)
    launching = new_marker(LANE, "2nodes-dac", "dgx1", LOCK)
    under_way = Ownership(LOCK, {LANE: launching})
    assert orphan_reason(LANE, under_way, alive) is None
    gone = orphan_reason(LANE, under_way, dead) or ""
    assert "never reached ready and is gone" in gone and "op@deck (pid 4242)" in gone
    no_lock = orphan_reason(LANE, Ownership(None, {LANE: launching}), alive) or ""
    assert "holds no lock" in no_lock
    other = LockRecord("op", "deck", 4242, "launch", 1000.0, lane=LANE, token="another")
    assert "holds no lock" in (
        orphan_reason(LANE, Ownership(other, {LANE: launching}), alive) or ""
    )
    assert orphan_reason(LANE, Ownership(None, {LANE: launching.ready()}), dead) is None
    assert "no launch record" in (orphan_reason(LANE, Ownership(), alive) or "")
    assert orphan_reason(LANE, Ownership(LOCK), alive) is None  # an operation holds it now
    old = holder_check(now=1000.0 + 7 * 3600, local_host="elsewhere", pid_alive=lambda pid: True)
    assert "TTL" in (orphan_reason(LANE, under_way, old) or "")
