"""The launch confirmation shows the plan's memory fit before anything runs."""

from __future__ import annotations

from collections.abc import Callable

from textual.widgets import Static

from cockpit.tui.app import CockpitApp
from cockpit.tui.screens.confirm import ConfirmScreen
from tests.tui.scripted_ops import ScriptedOperations

LINE = (
    "memory per rank: weights 87.0 GiB + runtime 3.3 GiB + KV 11.4 GiB (≈ 600K tokens) of "
    "119.7 GiB × 0.85 — fits 1 of 16 sequences at 524,288 tokens, 0.8 GiB headroom"
)


async def test_the_launch_confirmation_shows_the_memory_fit(
    make_app: Callable[..., CockpitApp],
) -> None:
    ops = ScriptedOperations(memory=LINE)
    app = make_app(operations=ops)
    async with app.run_test(size=(200, 40)) as pilot:
        await pilot.pause()
        await pilot.press("l")
        await pilot.pause(0.1)
        assert isinstance(app.screen, ConfirmScreen)
        shown = str(app.screen.query_one("#plan-text", Static).content)
        assert LINE in shown and shown.index(LINE) < shown.index(" 1. step 1")
        await pilot.press("n")
        await app.workers.wait_for_complete()
        assert ops.started == []
