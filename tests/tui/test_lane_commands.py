"""The palette's lane entries: every lane × operation, found by words in any order."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.command import CommandPalette
from textual.pilot import Pilot

from cockpit.tui.app import CockpitApp
from cockpit.tui.lane_commands import words_score
from cockpit.tui.screens.confirm import ConfirmScreen
from tests.tui.scripted_ops import ScriptedOperations

PRO = "Launch mimo26-pro-mopd-8x-sparkring@8nodes-switch"


async def choose(pilot: Pilot, query: str, screen: type) -> None:
    """Open the palette, type `query`, take the first hit; wait for `screen` to show."""
    await pilot.press("ctrl+p")
    await pilot.pause(0.2)
    assert isinstance(pilot.app.screen, CommandPalette)
    await pilot.press(*query)
    await pilot.pause(0.5)
    await pilot.press("enter")
    for _ in range(40):
        if isinstance(pilot.app.screen, screen):
            break
        await pilot.pause(0.05)
    assert isinstance(pilot.app.screen, screen)


def test_any_words_in_any_order_find_a_lane() -> None:
    assert words_score("pro 8x", PRO) > 0
    assert words_score("8x launch", PRO) > 0
    assert words_score("pro 4x", PRO) == 0
    assert words_score("", PRO) == 0


@pytest.mark.parametrize(
    ("words", "op"), [("stop qwen dac", "stop"), ("model snapshot qwen dac", "sync_model")]
)
async def test_the_palette_runs_an_operation_on_the_lane_it_names(
    make_app: Callable[..., CockpitApp], words: str, op: str
) -> None:
    ops = ScriptedOperations()
    app = make_app(operations=ops)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.3)
        await choose(pilot, words, ConfirmScreen)
        await pilot.press("y")
        await pilot.pause(0.5)
        assert ops.started == [(op, "qwen3-0.6b-2x")]


async def test_the_palette_has_no_duplicate_of_textuals_own_entries(
    make_app: Callable[..., CockpitApp],
) -> None:
    app = make_app(operations=ScriptedOperations())
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.2)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Theme" not in titles and "Maximize" not in titles and "Keys" not in titles
        assert len(titles) == len(set(titles))


async def test_a_bench_from_the_palette_opens_its_plan_editor(
    make_app: Callable[..., CockpitApp],
) -> None:
    from cockpit.tui.screens.bench_plan import BenchPlanScreen

    app = make_app(operations=ScriptedOperations())
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.3)
        await choose(pilot, "bench qwen dac", BenchPlanScreen)
