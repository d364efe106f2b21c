"""SIGTERM/SIGHUP in the TUI: the running operations are cancelled and roll back, then it exits."""

from __future__ import annotations

import signal
from collections.abc import Callable

from cockpit.tui.app import CockpitApp
from tests.tui.scripted_ops import ScriptedOperations
from tests.tui.test_keys import SERVING, SIZE, select_lane


async def test_a_signal_rolls_the_running_operation_back_then_exits(
    make_app: Callable[..., CockpitApp],
) -> None:
    ops = ScriptedOperations(step_s=5.0)
    app = make_app(operations=ops)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await select_lane(app, SERVING)
        await pilot.press("s", "y")
        await pilot.pause(0.3)
        assert ops.started == [("stop", SERVING.split("@")[0])] and ops.rolled_back == []
        await app.terminate(signal.SIGTERM)
        await pilot.pause(0.1)
        assert ops.rolled_back == ["stop"]
    assert app.return_code == 128 + signal.SIGTERM
