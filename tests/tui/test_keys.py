"""Pilot tests of the keys on the recorded scene with scripted operations."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.widgets import Input

from cockpit.tui.app import CockpitApp
from cockpit.tui.keymap import DEMO_ONLY, MAIN_BINDINGS
from cockpit.tui.screens.confirm import ConfirmScreen
from cockpit.tui.screens.details import DetailsScreen
from cockpit.tui.screens.help import HelpScreen
from cockpit.tui.screens.main import MainScreen
from cockpit.tui.settings import load_settings
from cockpit.tui.state import NodeLost
from cockpit.tui.state.views import LogSource
from cockpit.tui.widgets.lanes import LanesPane
from cockpit.tui.widgets.logs import LogPane
from cockpit.tui.widgets.tail import TailLog
from tests.tui import scene
from tests.tui.scripted_ops import ScriptedOperations
from tests.tui.waits import until

SIZE = (160, 48)
SERVING = f"{scene.LANE}@{scene.CLUSTER}"


async def select_lane(app: CockpitApp, key: str) -> None:
    lanes = app.screen.query_one(LanesPane)
    row = lanes.table.get_row_index(key)
    lanes.table.move_cursor(row=row)
    lanes.table.focus()


def main(app: CockpitApp) -> MainScreen:
    screen = app.screen_stack[1]
    assert isinstance(screen, MainScreen)
    return screen


async def test_launch_shows_the_plan_and_runs_only_when_confirmed(
    make_app: Callable[..., CockpitApp],
) -> None:
    ops = ScriptedOperations()
    app = make_app(operations=ops)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await select_lane(app, "qwen3-0.6b-2x@dgx56-switch")
        await pilot.press("l")
        await pilot.pause(0.1)
        assert isinstance(app.screen, ConfirmScreen)
        assert app.screen.planned.summary == "launch qwen3-0.6b-2x on dgx56-switch"
        await pilot.press("n")
        await app.workers.wait_for_complete()
        assert ops.started == []  # refused at the plan: nothing ran
        await pilot.press("l")
        await pilot.pause(0.1)
        await pilot.press("y")
        await app.workers.wait_for_complete()
        await pilot.pause(0.1)
        done = [op for op in main(app).snap.ops if op.op == "launch" and not op.running]
        assert ops.started == [("launch", "qwen3-0.6b-2x")]
        assert done[0].ok and done[0].summary == "launch done"


async def test_a_running_operation_is_cancelled_with_its_rollback(
    make_app: Callable[..., CockpitApp],
) -> None:
    ops = ScriptedOperations(step_s=5.0)
    app = make_app(operations=ops)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await select_lane(app, SERVING)
        await pilot.press("s", "y")
        await pilot.pause(0.3)
        running = [op for op in main(app).snap.ops if op.running and op.op == "stop"]
        assert running and running[0].current.startswith("step 1")
        await pilot.press("t")  # the app stays usable while it runs
        await pilot.press("x")
        await app.workers.wait_for_complete()
        await pilot.pause(0.2)
        assert ops.rolled_back == ["stop"]
        stop = next(op for op in main(app).snap.ops if op.op == "stop")
        assert stop.ok is False and stop.summary == "cancelled: rolled back"


async def test_readonly_refuses_node_changing_keys_and_says_so(
    make_app: Callable[..., CockpitApp],
) -> None:
    ops = ScriptedOperations()
    app = make_app(operations=ops, readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        for key in ("l", "s", "y", "b", "w"):
            await pilot.press(key)
        await until(pilot, "six notices", lambda: len(app._notifications) >= 6, timeout=10)
        await pilot.pause(0.1)  # and no seventh
        assert isinstance(app.screen, MainScreen) and ops.started == []
        messages = [n.message for n in app._notifications]
        refused = [m for m in messages if "read-only" in m]
        assert len(refused) == 5 and len(messages) == 6  # and the scene's lane's advice
        assert app.screen.sub_title == "READ-ONLY"


async def test_help_palette_and_footer_come_from_the_same_bindings(
    make_app: Callable[..., CockpitApp],
) -> None:
    app = make_app(keymap={"launch": "ctrl+l"}, operations=ScriptedOperations())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        rows = main(app).key_rows()
        described = {desc for _, desc, _ in rows}
        offered = [b for b in MAIN_BINDINGS if b.action not in DEMO_ONLY]  # not a demo
        for binding in offered:
            if binding.action.startswith("pane("):  # the eight share one row
                assert any(k == "1-8" and binding.description in d for k, d, _ in rows)
                continue
            assert (binding.tooltip or binding.description) in described
        assert ("^l", "Launch the selected lane on its cluster", "") in rows
        palette = {c.title for c in app.get_system_commands(app.screen)}
        unmendable = ("quit", "help", "fix")  # `fix` only once a refusal names one
        assert {b.tooltip or b.description for b in offered if b.id not in unmendable} <= palette
        assert not any("refusal's fix" in title for title in palette)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.press("ctrl+l")  # the override works
        await pilot.pause(0.1)
        assert isinstance(app.screen, ConfirmScreen)


async def test_the_help_is_built_once_and_shown_again_in_the_theme_of_the_moment(
    make_app: Callable[..., CockpitApp],
) -> None:
    """Composing the help and measuring its table cost most of a `?` press (55 ms of CPU, 21
    with the help kept: `benchmarks/tui_press_cpu.py`); kept, it must still follow the theme."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        first = app.screen
        assert isinstance(first, HelpScreen)
        background = first.query_one("#dialog").styles.background
        await pilot.press("escape", "t", "question_mark")
        await pilot.pause(0.1)
        assert app.screen is first
        assert first.query_one("#dialog").styles.background != background
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_theme_cycles_and_persists(make_app: Callable[..., CockpitApp]) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.theme == "cockpit-dark"
        await pilot.press("t")
        assert app.theme in app.cockpit_themes and app.theme != "cockpit-dark"
        await app.workers.wait_for_complete()  # saved in a thread, off the event loop
        assert load_settings(app.settings.path).theme == app.theme


async def test_in_a_browser_the_theme_changes_but_the_hosts_file_does_not(
    make_app: Callable[..., CockpitApp], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(CockpitApp, "is_web", property(lambda app: True))  # `cockpit serve`
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        before = app.settings.path.read_bytes() if app.settings.path.exists() else None
        await pilot.press("t")
        assert app.theme != "cockpit-dark"
        await app.workers.wait_for_complete()
        after = app.settings.path.read_bytes() if app.settings.path.exists() else None
        assert after == before


async def test_maximise_details_search_follow(make_app: Callable[..., CockpitApp]) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = main(app)
        await pilot.press("m")
        assert screen.maximized is screen.query_one(LanesPane)
        await pilot.press("m")
        assert screen.maximized is None
        await select_lane(app, SERVING)
        await pilot.press("enter")
        assert isinstance(app.screen, DetailsScreen) and app.screen.lane.key == SERVING
        await pilot.press("escape")
        log = screen.query_one(LogPane)
        tail = log.query_one(TailLog)
        assert tail.line_count > 20
        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        await pilot.press(*"startup", "enter")
        await pilot.pause(0.1)
        assert 0 < tail.line_count < 5  # non-matching lines are hidden, not only highlighted
        assert all("startup" in line.lower() for line in tail.lines)
        await pilot.press("f")
        assert not tail.following and "PAUSED" in (log.border_subtitle or "")
        await pilot.press("f")
        assert tail.following


async def test_enter_on_a_node_shows_its_log(make_app: Callable[..., CockpitApp]) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = main(app)
        nodes = screen.query_one("#nodes-table")
        nodes.focus()
        nodes.move_cursor(row=5)  # dgx6: rank 1
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert screen.query_one(LogPane).source == LogSource(SERVING, "dgx6", 1)


class FlakyFeed:
    """Fails on its first run, then delivers one fact."""

    name = "flaky"

    def __init__(self) -> None:
        self.runs = 0

    async def batches(self):  # type: ignore[no-untyped-def]
        self.runs += 1
        if self.runs == 1:
            raise ConnectionResetError("link dropped")
        yield [NodeLost("dgx1", scene.T0, "after the restart")]


async def test_a_failing_feed_is_shown_and_restarted(make_app: Callable[..., CockpitApp]) -> None:
    feed = FlakyFeed()
    app = make_app(feeds=[feed])
    async with app.run_test(size=SIZE) as pilot:
        seen: set[str] = set()  # the notice's 8 s may end before the restart on a loaded machine

        def restarted() -> bool:
            seen.update(n.message for n in app._notifications)
            return app.store.snapshot(scene.T0).nodes[0].error == "after the restart"

        await until(pilot, "the feed's restart", restarted)
        assert feed.runs == 2
        assert any("flaky feed failed" in message for message in seen), seen


async def test_a_slow_plan_says_the_key_was_taken(make_app: Callable[..., CockpitApp]) -> None:
    app = make_app(operations=ScriptedOperations(plan_s=1.0))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await select_lane(app, "qwen3-0.6b-2x@dgx56-switch")
        await pilot.press("w")
        await pilot.pause(0.6)
        assert not isinstance(app.screen, ConfirmScreen)
        notices = [n.message for n in app._notifications]
        assert "switch qwen3-0.6b-2x@dgx56-switch: planning…" in notices
        await pilot.pause(0.8)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")


async def test_a_quick_plan_shows_no_planning_notice(make_app: Callable[..., CockpitApp]) -> None:
    app = make_app(operations=ScriptedOperations())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await select_lane(app, "qwen3-0.6b-2x@dgx56-switch")
        await pilot.press("w")
        await pilot.pause(0.5)
        assert isinstance(app.screen, ConfirmScreen)
        assert not any("planning" in n.message for n in app._notifications)
        await pilot.press("n")
