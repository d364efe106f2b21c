"""`b`: the bench plan editor, prefilled with the lane's last plan, before the usual confirmation
(Pilot on the recorded scene with scripted operations)."""

from __future__ import annotations

from collections.abc import Callable

from textual.pilot import Pilot
from textual.widgets import Button, Input, RadioButton, Static

from cockpit.bench.events import SweepPlanned
from cockpit.bench.models import SweepPlan
from cockpit.tui.app import CockpitApp
from cockpit.tui.operations import LaneTarget
from cockpit.tui.screens.bench_plan import BenchPlanScreen
from cockpit.tui.screens.confirm import ConfirmScreen
from cockpit.tui.screens.main import MainScreen
from tests.tui.scripted_ops import ScriptedOperations
from tests.tui.test_keys import SIZE, select_lane

QWEN = LaneTarget("qwen3-0.6b-2x", "dgx56-switch")  # max-model-len 32768
QWEN_KEY = f"{QWEN.lane}@{QWEN.cluster}"
FIELDS = ("depths", "concurrency", "runs", "pp", "tg")


async def open_editor(pilot: Pilot, key: str = QWEN_KEY) -> BenchPlanScreen:
    app = pilot.app
    assert isinstance(app, CockpitApp)
    await select_lane(app, key)
    await pilot.press("b")
    await pilot.pause(0.1)
    assert isinstance(app.screen, BenchPlanScreen)
    return app.screen


def fields(editor: BenchPlanScreen) -> dict[str, str]:
    texts = {name: editor.query_one(f"#{name}", Input).value for name in FIELDS}
    texts["mode"] = "cold" if editor.query_one("#mode-cold", RadioButton).value else "warm"
    texts["driver"] = next(
        d
        for d in ("builtin", "llama-benchy")
        if editor.query_one(f"#driver-{d}", RadioButton).value
    )
    return texts


def why(editor: BenchPlanScreen, name: str) -> str:
    return str(editor.query_one(f"#{name}-why", Static).render()).strip()


async def retype(pilot: Pilot, editor: BenchPlanScreen, name: str, text: str) -> None:
    """Clear a field and type `text` into it, key by key, as an operator would."""
    field = editor.query_one(f"#{name}", Input)
    field.focus()
    field.value = ""
    await pilot.press(*text)
    await pilot.pause()


def notices(app: CockpitApp) -> list[str]:
    return [n.message for n in app._notifications]  # type: ignore[attr-defined]


async def test_b_opens_the_editor_with_the_clis_defaults_and_three_runs(
    make_app: Callable[..., CockpitApp],
) -> None:
    ops = ScriptedOperations()
    app = make_app(operations=ops)
    async with app.run_test(size=SIZE) as pilot:
        editor = await open_editor(pilot)
        assert fields(editor) == {"depths": "0,4K,8K,16K,64K,128K,256K", "concurrency": "1,2",
                                  "runs": "3", "pp": "2048", "tg": "32", "mode": "warm",
                                  "driver": "builtin"}  # fmt: skip
        origin = str(editor.query_one(".plan-origin", Static).render())
        assert "cockpit bench's defaults" in origin and "max-model-len 32,768" in origin
        # the depths the lane cannot hold are flagged as the bench skips them, not refused
        assert why(editor, "depths") == (
            "64K, 128K, 256K skipped: beyond the lane's max-model-len 32768"
        )
        assert not editor.query_one("#run", Button).disabled
        assert app.focused is editor.query_one("#depths", Input)
        await pilot.press("tab")
        assert app.focused is editor.query_one("#concurrency", Input)


async def test_edited_plan_runs_after_the_confirmation_with_exactly_its_points(
    make_app: Callable[..., CockpitApp],
) -> None:
    ops = ScriptedOperations()
    app = make_app(operations=ops)
    async with app.run_test(size=SIZE) as pilot:
        editor = await open_editor(pilot)
        await retype(pilot, editor, "depths", "0,1K,8192")
        await retype(pilot, editor, "concurrency", "1")
        await retype(pilot, editor, "runs", "5")
        await pilot.press("tab", "tab", "tab", "right")  # pp, tg, prefix: warm → cold
        await pilot.press("tab", "right")  # driver: builtin → llama-benchy
        assert fields(editor)["mode"] == "cold" and fields(editor)["driver"] == "llama-benchy"
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert isinstance(app.screen, ConfirmScreen) and ops.benched == []  # not before a yes
        wanted = SweepPlan((0, 1024, 8192), (1,), 2048, 32, 5, cold=True, driver="llama-benchy")
        planned = app.screen.planned
        assert isinstance(planned, SweepPlanned) and planned.plan == wanted
        assert planned.steps == tuple(p.label for p in wanted.points)
        await pilot.press("y")
        await app.workers.wait_for_complete()
        assert ops.benched == [(QWEN.lane, wanted)] and ops.started == [("bench", QWEN.lane)]
        assert [p.depth for p in wanted.points] == [0, 1024, 8192]


async def test_escape_changes_nothing(make_app: Callable[..., CockpitApp]) -> None:
    ops = ScriptedOperations()
    app = make_app(operations=ops)
    async with app.run_test(size=SIZE) as pilot:
        editor = await open_editor(pilot)
        await retype(pilot, editor, "runs", "7")
        await pilot.press("escape")
        await pilot.pause(0.1)
        assert isinstance(app.screen, MainScreen)
        assert notices(app)[-1] == "bench cancelled: nothing changed"
        await app.workers.wait_for_complete()
        assert ops.benched == [] and ops.started == []
        editor = await open_editor(pilot)  # the edit is not remembered either
        assert fields(editor)["runs"] == "3"


async def test_a_bad_depth_says_why_under_it_and_blocks(
    make_app: Callable[..., CockpitApp],
) -> None:
    ops = ScriptedOperations()
    app = make_app(operations=ops)
    async with app.run_test(size=SIZE) as pilot:
        editor = await open_editor(pilot)
        await retype(pilot, editor, "depths", "0,abc")
        editor.query_one("#runs", Input).focus()
        assert why(editor, "depths") == "'abc' is not a number (write 4096 or 4K)"
        assert editor.query_one("#run", Button).disabled
        assert "fix the field(s) marked above" in str(
            editor.query_one("#plan-summary", Static).render()
        )
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert app.screen is editor  # Enter does not plan a bad plan: it shows the bad field
        assert app.focused is editor.query_one("#depths", Input)
        # the lane's max-model-len, as the bench counts it: no point left refuses the plan
        await retype(pilot, editor, "depths", "64K,128K")
        assert why(editor, "depths") == (
            "no point fits the lane's max-model-len 32768 (depth + pp + tg)"
        )
        assert editor.query_one("#run", Button).disabled
        await retype(pilot, editor, "depths", "4K")
        assert why(editor, "depths") == "" and not editor.query_one("#run", Button).disabled
        await pilot.press("escape")
        await app.workers.wait_for_complete()
        assert ops.benched == []


async def test_the_next_b_on_the_lane_starts_from_its_last_plan(
    make_app: Callable[..., CockpitApp],
) -> None:
    """This session's last plan of the lane first, else the plan of its newest report (here the
    scripted operations' `last_plans`), else the defaults; another lane keeps its own."""
    reported = SweepPlan((0, 16384), (2,), 1024, 64, runs=4)
    ops = ScriptedOperations(last_plans={QWEN: reported})
    app = make_app(operations=ops)
    async with app.run_test(size=SIZE) as pilot:
        editor = await open_editor(pilot)
        assert fields(editor)["depths"] == "0,16K" and fields(editor)["runs"] == "4"
        assert "the lane's last report" in str(editor.query_one(".plan-origin", Static).render())
        await retype(pilot, editor, "tg", "128")
        await pilot.press("enter")
        await pilot.pause(0.1)
        await pilot.press("y")
        await app.workers.wait_for_complete()
        editor = await open_editor(pilot)
        assert fields(editor) == {"depths": "0,16K", "concurrency": "2", "runs": "4",
                                  "pp": "1024", "tg": "128", "mode": "warm",
                                  "driver": "builtin"}  # fmt: skip
        assert "your last plan of this lane" in str(
            editor.query_one(".plan-origin", Static).render()
        )
        await pilot.press("escape")
        await pilot.pause(0.1)
        other = await open_editor(pilot, "qwen3-0.6b-2x@2nodes-dac")
        assert fields(other)["depths"] == "0,4K,8K,16K,64K,128K,256K"
