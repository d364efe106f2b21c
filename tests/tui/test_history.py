"""The TUI records into the history: its runs as the store hears them, the frames' figures."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from cockpit.history.past import PastFigures
from cockpit.history.recorder import Recorder
from cockpit.history.records import LaneSample, NodeSample
from cockpit.history.store import HistoryStore
from cockpit.history.writer import Writer
from cockpit.tui.app import CockpitApp
from cockpit.tui.screens import main as main_screen
from cockpit.tui.screens.main import PAST_SPANS
from tests.tui import scene
from tests.tui.scripted_ops import ScriptedOperations
from tests.tui.test_keys import SERVING, SIZE, main, select_lane


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


async def test_h_reaches_back_past_the_session_and_returns(
    make_app: Callable[..., CockpitApp], tmp_path: Path
) -> None:
    db = tmp_path / "history.db"
    store = HistoryStore.open(db)
    hour = [scene.T0 - 3600 + 10 * i for i in range(360)]
    store.write(
        [LaneSample(scene.LANE, scene.CLUSTER, at, 10.0, 5, 100.0, 900.0, 0.5) for at in hour]
        + [NodeSample("dgx1", at, 30.0, 3, 75.0) for at in hour[::3]]
    )
    store.close()
    app = make_app(recorder=Recorder(Writer(db, None)))
    key = f"{scene.LANE}@{scene.CLUSTER}"
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = main(app)
        session = screen.snap.engines[key].kv_history
        await pilot.press("h")
        await pilot.pause(0.5)
        assert screen.sub_title.startswith("history 1h · ")
        engine = screen.snap.engines[key]
        assert engine.kv_history == (0.5,) * 20 and engine.gen_history == (100.0,) * 20
        assert engine.kv_usage == app.store.snapshot(scene.T0).engines[key].kv_usage  # live
        nodes = {n.name: n.util_history for n in screen.snap.nodes}
        assert nodes["dgx1"] == (75.0,) * 12
        assert all(h == (0.0,) * 12 for n, h in nodes.items() if n != "dgx1")  # none recorded
        for _ in PAST_SPANS:  # 24h, 7d, then this session's again
            await pilot.press("h")
        await pilot.pause(0.2)
        assert screen.snap.engines[key].kv_history == session
        assert not screen.sub_title.startswith("history")
    app.recorder.close()


async def test_h_without_a_store_says_so(make_app: Callable[..., CockpitApp]) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("h")
        await pilot.pause(0.1)
        assert "no history store in this session" in str([n.message for n in app._notifications])


async def test_h_reads_a_teams_prometheus_when_it_is_the_source(
    make_app: Callable[..., CockpitApp], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`[history] source = "prometheus:URL"`: `h` asks that Prometheus (its query_range, in a
    thread; tests/exporter/test_prometheus_fleet.py asks a real one) and needs no local store."""
    asked: list[tuple[object, ...]] = []

    def from_prometheus(base: str, lane: object, nodes: object, now: float, span: float):  # type: ignore[no-untyped-def]
        asked.append((base, lane, span))
        return PastFigures(span, lane, (0.25,) * 20, (42.0,) * 20, (0.0,) * 20, {})  # type: ignore[arg-type]

    monkeypatch.setattr(main_screen, "read_past_prometheus", from_prometheus)
    app = make_app(past_source="http://127.0.0.1:9")
    key = f"{scene.LANE}@{scene.CLUSTER}"
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("h")
        await pilot.pause(0.5)
        assert asked and asked[0][0] == "http://127.0.0.1:9" and asked[0][2] == PAST_SPANS[0][1]
        assert main(app).snap.engines[key].gen_history == (42.0,) * 20
