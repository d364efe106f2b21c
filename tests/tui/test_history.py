"""The TUI records into the history: its runs as the store hears them, the frames' figures."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cockpit.history.recorder import Recorder
from cockpit.history.store import HistoryStore
from cockpit.history.writer import Writer
from cockpit.tui.app import CockpitApp
from tests.tui import scene
from tests.tui.scripted_ops import ScriptedOperations
from tests.tui.test_keys import SERVING, SIZE, select_lane


async def test_runs_and_figures_reach_the_history(
    make_app: Callable[..., CockpitApp], tmp_path: Path
) -> None:
    db = tmp_path / "history.db"
    recorder = Recorder(Writer(db, None))
    app = make_app(operations=ScriptedOperations(step_s=0.5), recorder=recorder)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await select_lane(app, "qwen3-0.6b-2x@dgx56-switch")
        await pilot.press("l", "y")
        await app.workers.wait_for_complete()
        await select_lane(app, SERVING)
        await pilot.press("s", "y")
        await pilot.pause(0.3)
        await pilot.press("x")  # cancelled while it runs: it rolls back
        await app.workers.wait_for_complete()
        await pilot.pause(0.1)
    recorder.close()
    store = HistoryStore.open(db)
    try:
        ops = [(o.op, o.lane, o.outcome, o.summary) for o in store.ops(0)]
        assert ops == [
            ("launch", "qwen3-0.6b-2x", "ok", "launch done"),
            ("stop", scene.LANE, "failed", "cancelled: rolled back"),
        ]
        assert store.ops(0)[0].nodes == ("dgx1",)
        assert store.lane_samples(scene.LANE, 0)  # the scene's engine, from the first frame
        assert store.names("node")  # and its live nodes
    finally:
        store.close()
