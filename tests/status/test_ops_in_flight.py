"""Issue 31: "other cockpits are invisible". An operation in flight is recorded on its nodes
(`cockpit.ops.op_records`), so `cockpit status` run by anyone shows it: who, what, since, how
far; it goes when the operation ends, and one whose cockpit died reads stale after a lease."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cockpit.ops.op_records import OpOnNode, OpRecord, parse_records
from cockpit.status.op_view import operations
from cockpit.status.probe import NodeFacts
from cockpit_sim.fleet import SimFleet
from tests.cli_runner import run_cockpit

QWEN, CLUSTER = "qwen3-0.6b-2x", "2nodes-dac"
LATE = ("boot", "ready")  # the steps a launch whose head hangs reaches and stays in


def _operations(fleet: SimFleet) -> list[dict[str, Any]]:
    done = run_cockpit("--inventory", fleet.inventory_dir, "status", "--format", "json")
    return json.loads(done.stdout)["operations"]


def test_a_launch_by_another_cockpit_shows_in_status_while_it_runs(
    fleet_factory: Callable[..., SimFleet], tmp_path: Path
) -> None:
    fleet = fleet_factory(2)
    env = {**os.environ, "COCKPIT_STATE_DIR": str(tmp_path / "state")}
    fleet.set_fault("dgx1", "hang_after_start")  # the launch waits on its head: it stays in flight
    launching = subprocess.Popen(
        [sys.executable, "-m", "cockpit", "--inventory", str(fleet.inventory_dir),
         "launch", "-r", QWEN, "-c", CLUSTER],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (ops := _operations(fleet)) or not ops[0]["record"]["step"].startswith(LATE):
            assert launching.poll() is None and time.monotonic() < deadline, ops
            time.sleep(0.5)
        (op,) = ops
        record = op["record"]
        assert (record["op"], record["lane"], record["cluster"]) == ("launch", QWEN, CLUSTER)
        assert record["pid"] == launching.pid and record["nodes"] == ["dgx1", "dgx2"]
        assert op["seen_on"] == ["dgx1", "dgx2"] and not op["stale"]
        table = run_cockpit("--inventory", fleet.inventory_dir, "status").stdout
        line = next(t for t in table.splitlines() if t.startswith("operation: "))
        assert f"launch {QWEN} @ {CLUSTER} by {record['user']}@{record['host']}" in line, line
        assert f"(pid {launching.pid}) since " in line and line.endswith(" — on dgx1, dgx2")
        assert any(f": {step}" in line for step in LATE), line
    finally:
        launching.send_signal(signal.SIGTERM)  # rolls back, and its record goes with it
        launching.wait(60)
        fleet.set_fault("dgx1", "hang_after_start", on=False)
    assert _operations(fleet) == []


def test_records_are_one_operation_across_nodes_and_stale_once_not_renewed() -> None:
    """Pure: the freshest node's record stands for the operation; a lease without renewal
    (the node's clock, plus the time since the read) makes it stale."""
    old = OpRecord("a1", "ops", "deck", 7, "sync", "qwen", "c", 100.0, "copy on dgx1")
    new = OpRecord("a1", "ops", "deck", 7, "sync", "qwen", "c", 100.0, "copy on dgx2")

    def facts(record: OpRecord, node: str, age: int, at: float) -> NodeFacts:
        return NodeFacts(ops=f"{record.file_name(node)}\t{age}\t{record.dumps()}", ops_at=at)

    seen = {"dgx1": facts(old, "dgx1", 20, 1000.0), "dgx2": facts(new, "dgx2", 2, 1000.0)}
    (op,) = operations(seen, 1001.0)
    assert op.record == new and op.seen_on == ("dgx1", "dgx2") and op.age_s == 3.0
    assert not op.stale and "copy on dgx2 — on dgx1, dgx2" in op.line()
    (late,) = operations(seen, 1060.0)
    assert late.stale and "stale: not renewed for 62 s" in late.line()
    text = f"dgx2.a1.json\t5\t{new.dumps()}\ndgx1.b.json\tx\t{{}}\nnot a record"
    assert parse_records("dgx2", text) == [OpOnNode(new, 5.0)]  # another node's, junk: left out
