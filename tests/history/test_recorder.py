"""The consumer-side recorder: events and figures in, rows in the store out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cockpit.bench import artifacts
from cockpit.bench.events import SweepFinished
from cockpit.errors import InputError
from cockpit.events import Finished, OpEvent, Planned, StepFinished, StepStarted
from cockpit.history.downsample import Reading
from cockpit.history.recorder import Recorder, recording
from cockpit.history.store import HistoryStore
from cockpit.history.writer import Writer
from cockpit.ops.interrupt import Interrupted
from tests.bench.test_reports import _report

T = 1_800_000_000.0
LANE, CLUSTER = "qwen3-0.6b-2x", "2nodes-dac"


@pytest.fixture
def recorder(db: Path) -> Iterator[Recorder]:
    made = Recorder(Writer(db, None))
    yield made
    made.close()


def _read(recorder: Recorder, db: Path) -> HistoryStore:
    recorder.close()
    return HistoryStore.open(db)


def ev(kind: type[OpEvent], at: float, op: str = "launch", **kw: object) -> OpEvent:
    return kind(op=op, lane=LANE, cluster=CLUSTER, ts=T + at, **kw)  # type: ignore[call-arg]


def launch_events(op: str = "launch") -> list[OpEvent]:
    """A launch's events as `cockpit.ops.launch` yields them: the boot tracker's phases per node,
    the head (dgx1) reaching ready, then the watch."""
    return [
        ev(Planned, 0, op, steps=("preflight", "start", "boot"), summary="launch"),
        ev(StepStarted, 1, op, step="boot"),
        ev(StepStarted, 1, op, step="boot/starting", node="dgx1"),
        ev(StepStarted, 1, op, step="boot/starting", node="dgx2"),
        ev(StepFinished, 3, op, step="boot/starting", node="dgx1"),
        ev(StepStarted, 3, op, step="boot/loading weights", node="dgx1"),
        ev(StepFinished, 4, op, step="boot/starting", node="dgx2"),
        ev(StepStarted, 4, op, step="boot/loading weights", node="dgx2"),
        ev(StepFinished, 9, op, step="boot/loading weights", node="dgx1"),
        ev(StepStarted, 9, op, step="boot/ready", node="dgx1"),
        ev(StepFinished, 9, op, step="boot", detail="ready"),
        ev(StepFinished, 10, op, step="ready", detail="answered"),
        ev(StepFinished, 13, op, step="boot/ready", node="dgx1"),
        ev(StepFinished, 13, op, step="boot/loading weights", node="dgx2"),
        ev(StepFinished, 13, op, step="watch"),
    ]


def test_a_launch_leaves_its_op_and_its_boot_with_every_phase(recorder: Recorder, db: Path) -> None:
    for event in launch_events():
        recorder.observe(7, event)
    recorder.observe(7, Finished.done("launch", "ready after 9.0 s", lane=LANE, cluster=CLUSTER))
    store = _read(recorder, db)
    (op,) = store.ops(0)
    assert (op.op, op.lane, op.cluster, op.started, op.outcome, op.exit_code) == (
        "launch", LANE, CLUSTER, T, "ok", 0,
    )  # fmt: skip
    assert op.nodes == ("dgx1", "dgx2") and op.who == recorder.who and "@" in op.who
    (boot,) = store.boots(0)
    assert (boot.head, boot.outcome, boot.seconds, boot.op_id) == ("dgx1", "ok", 9.0, op.id)
    phases = {(p.node, p.phase): p.seconds for p in boot.phases}
    assert phases == {
        ("dgx1", "starting"): 2.0,
        ("dgx1", "loading weights"): 6.0,
        ("dgx1", "ready"): 4.0,
        ("dgx2", "starting"): 3.0,
        ("dgx2", "loading weights"): 9.0,
    }
    assert recorder.runs == {}


def test_a_failed_boot_is_recorded_with_its_run(recorder: Recorder, db: Path) -> None:
    for event in launch_events()[:8]:
        recorder.observe(1, event)
    recorder.observe(1, ev(StepFinished, 6, step="boot", ok=False, detail="dgx2: SafetensorError"))
    recorder.observe(
        1, Finished.failed("launch", "dgx2: SafetensorError", lane=LANE, cluster=CLUSTER)
    )
    store = _read(recorder, db)
    (boot,) = store.boots(0)
    assert (boot.outcome, boot.seconds, boot.head) == ("failed", None, "")
    assert {p.node for p in boot.phases} == {"dgx1", "dgx2"}
    assert store.ops(0)[0].outcome == "failed"


def test_a_sub_operations_finish_does_not_end_the_run(recorder: Recorder, db: Path) -> None:
    """A switch's sync ends with its own Finished; the switch goes on."""
    recorder.observe(1, ev(Planned, 0, "switch", steps=(), summary="switch"))
    recorder.observe(1, Finished.done("sync", "synced", lane=LANE, cluster=CLUSTER))
    for event in launch_events("switch")[1:]:
        recorder.observe(1, event)
    recorder.observe(1, Finished.done("switch", "switched", lane=LANE, cluster=CLUSTER))
    store = _read(recorder, db)
    assert [(o.op, o.outcome, o.summary) for o in store.ops(0)] == [("switch", "ok", "switched")]
    assert [b.outcome for b in store.boots(0)] == ["ok"]


def test_a_refusal_before_any_plan_is_recorded_as_refused(recorder: Recorder, db: Path) -> None:
    recorder.observe(3, Finished.refused("launch", "image missing on dgx2", lane=LANE))
    store = _read(recorder, db)
    assert [(o.outcome, o.exit_code, o.summary) for o in store.ops(0)] == [
        ("refused", 2, "image missing on dgx2")
    ]


@pytest.mark.parametrize(
    ("why", "outcome"),
    [("cancelled by the operator", "cancelled"), ("RuntimeError: boom", "failed")],
)
def test_a_tui_run_that_ended_without_its_finish(
    recorder: Recorder, db: Path, why: str, outcome: str
) -> None:
    """The TUI's OpEnded: the worker was cancelled, or the operation raised."""
    for event in launch_events()[:5]:
        recorder.observe(4, event)
    recorder.ended(4, why)
    recorder.ended(4, why)  # a second end changes nothing
    store = _read(recorder, db)
    assert [(o.outcome, o.summary) for o in store.ops(0)] == [(outcome, why)]
    assert [b.outcome for b in store.boots(0)] == [outcome]


@pytest.mark.parametrize(
    ("exc", "outcome", "code"),
    [
        (Interrupted(15), "cancelled", 143),
        (InputError("switch not confirmed: pass --yes"), "refused", 2),
        (OSError("pipe"), "failed", None),
    ],
)
def test_a_cli_run_that_raised(
    recorder: Recorder, db: Path, exc: BaseException, outcome: str, code: int | None
) -> None:
    with pytest.raises(type(exc)), recording(recorder) as run:
        run.observe(ev(Planned, 0, steps=(), summary="launch"))
        raise exc
    store = _read(recorder, db)
    (op,) = store.ops(0)
    assert (op.outcome, op.exit_code) == (outcome, code) and op.ended is not None


def test_a_bench_indexes_the_report_it_wrote(recorder: Recorder, db: Path, tmp_path: Path) -> None:
    report = _report({(0, 1): 40.0, (0, 2): 70.0, (4096, 1): 35.0}, "nightly", "2026-12-04_080000")
    json_path, md_path = artifacts.save_report(tmp_path / "reports", report)
    recorder.observe(1, Planned(op="bench", lane=report.lane, cluster=report.cluster, steps=()))
    recorder.observe(1, SweepFinished(op="bench", lane=report.lane, cluster=report.cluster,
                                      ok=True, summary="3 points", report_json=str(json_path),
                                      report_md=str(md_path)))  # fmt: skip
    store = _read(recorder, db)
    (row,) = store.benches(0)
    assert row.path == str(json_path.resolve()) and (row.lane, row.label) == (
        report.lane,
        "nightly",
    )
    assert (row.depth, row.tg_c1, row.tg_c2, row.deep, row.tg_c1_deep) == (
        0,
        40.0,
        70.0,
        4096,
        35.0,
    )
    assert row.pp_c1 == 4000.0 and (row.mode, row.driver, row.points) == (
        "warm prefix",
        "builtin",
        3,
    )
    assert store.ops(0)[0].op == "bench"


def test_a_report_that_cannot_be_read_is_a_problem_not_a_crash(
    recorder: Recorder, db: Path, tmp_path: Path
) -> None:
    recorder.observe(1, SweepFinished(op="bench", ok=False, summary="x",
                                      report_json=str(tmp_path / "gone.json")))  # fmt: skip
    recorder.observe(2, Finished.done("stop", "stopped"))
    store = _read(recorder, db)
    assert store.benches(0) == [] and [o.op for o in store.ops(0)] == ["bench", "stop"]
    assert recorder.problem and "gone.json not indexed" in recorder.problem


def test_figures_are_downsampled_into_lane_and_node_rows(recorder: Recorder, db: Path) -> None:
    for i in range(6):  # a scrape every 2 s, a probe every 5 s, for 12 s
        at = T + 2 * i
        lanes = [Reading((LANE, CLUSTER), at, {"gen_tps": 10.0 * i, "kv_usage": 0.1 * i,
                                               "waiting": float(i)})]  # fmt: skip
        nodes = [Reading(("dgx1",), T + 5 * (i // 2), {"gpu_util": 50.0, "temp_c": 60.0 + i})]
        recorder.sample(lanes, nodes, at)
    store = _read(recorder, db)
    lane = store.lane_samples(LANE, 0)
    assert [(s.at, s.n, s.gen_tps) for s in lane] == [(T, 5, 20.0), (T + 10, 1, 50.0)]
    assert lane[0].kv_usage_max == pytest.approx(0.4) and lane[0].waiting_max == 4.0
    (node,) = store.node_samples("dgx1", 0)  # 30 s buckets: T is a multiple of 30
    assert (node.at, node.n, node.gpu_util, node.temp_max_c) == (T, 3, 50.0, 64.0)
