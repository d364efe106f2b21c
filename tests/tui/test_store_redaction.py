"""The TUI store shows rank log lines and a boot's failed line redacted and escaped."""

from __future__ import annotations

from cockpit.bench.events import BenchWarning, PointFinished, event_line, parse_event_line
from cockpit.bench.models import Flag, FlagKind, HangRecord, PointResult, PointSpec
from cockpit.events import Planned
from cockpit.tui.state import LanePhase, RankLines, Store
from cockpit.tui.state.inputs import OpUpdate
from tests.tui import scene

KEY = "sk-" + "Zq9" * 8


def test_log_lines_and_the_failed_line_are_redacted_and_escaped() -> None:
    inv = scene.inventory()
    store = Store(inv)
    store.apply_all(scene.node_samples(inv))
    lines = (
        f"(APIServer pid=1) INFO non-default args: {{'api_key': '{KEY}', 'port': 30000}}",
        "(APIServer pid=1) INFO title \x1b]0;owned\x07 and \u202eevil",
        f"(EngineCore_DP0 pid=287) ERROR 10-03 09:31:15 [core.py:708] ValueError: rejected key "
        f"{KEY}\u202e",
    )
    store.apply(RankLines("dgx5", scene.LANE, scene.CLUSTER, 0, lines))
    snap = store.snapshot(scene.T0)
    texts = [entry.text for entries in snap.logs.values() for entry in entries]
    assert texts[-3:] == [
        "(APIServer pid=1) INFO non-default args: {'api_key': '<redacted>', 'port': 30000}",
        "(APIServer pid=1) INFO title \\x1b]0;owned\\x07 and \\u202eevil",
        "(EngineCore_DP0 pid=287) ERROR 10-03 09:31:15 [core.py:708] ValueError: rejected key "
        "<redacted>\\u202e",
    ]
    lane = snap.lane(f"{scene.LANE}@{scene.CLUSTER}")
    assert lane is not None and lane.phase is LanePhase.FAILED
    assert "ValueError: rejected key <redacted>\\u202e" in lane.detail, lane.detail


def test_bench_warnings_and_finished_points_carry_no_secret_to_any_output() -> None:
    """Issue 19 (truth-files' report): a bench warning's flag and hang forensics (process
    states, a client's stack and command line) and a finished point's flags are texts the CLI,
    the TUI and the remote stream print; they pass through the redactor like the event's own."""
    forensics = f"pid 9 llama-benchy --api-key {KEY} --base-url http://u:hunter2pass@h/v1\u202e"
    flag = Flag(FlagKind.HUNG, f"hung: sent Authorization: Bearer {KEY}", f"--api-key {KEY}")
    point = PointSpec(4096, 2, 512, 32)
    warning = BenchWarning(
        op="bench", lane=scene.LANE, cluster=scene.CLUSTER, message=f"{point.label} hung",
        point=point, flag=flag, hang=HangRecord(30.0, "skipped", forensics),
    )  # fmt: skip
    result = PointResult(
        point, None, flags=(flag,), hangs=(HangRecord(30.0, "retried", forensics),)
    )
    finished = PointFinished(op="bench", lane=scene.LANE, cluster=scene.CLUSTER, result=result)
    remote = [parse_event_line(event_line(e)) for e in (warning, finished)]  # --bench-host
    for event in (warning, finished, *remote):
        text = repr(event)
        assert KEY not in text and "hunter2pass" not in text and "\u202e" not in text, text
        assert "<redacted>" in text
    assert warning.flag is not None and warning.flag.kind is FlagKind.HUNG  # a name, kept
    assert finished.result.flags[0].message == "hung: sent Authorization: Bearer <redacted>"
    assert finished.result.spec == point and finished.result.hangs[0].action == "retried"
    store = Store(scene.inventory())
    store.apply(OpUpdate(1, Planned(op="bench", lane=scene.LANE, cluster=scene.CLUSTER, steps=())))
    store.apply(OpUpdate(1, warning))
    store.apply(OpUpdate(1, finished))
    (op,) = store.snapshot(scene.T0).ops
    assert op.notices == ("pp512/tg32 @ d4096 c2 hung",) and KEY not in repr(store.snapshot(0))
