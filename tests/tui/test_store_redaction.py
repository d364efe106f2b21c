"""The TUI store shows rank log lines and a boot's failed line redacted and escaped."""

from __future__ import annotations

from cockpit.tui.state import LanePhase, RankLines, Store
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
