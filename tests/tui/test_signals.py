"""Issue 19 in the TUI: SIGTERM/SIGHUP roll the running operations back before the app exits,
and a failed switch offers one key (`restore`) that launches the previous lane again."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from cockpit.events import Finished, OpEvent, Planned
from cockpit.tui.app import CockpitApp
from cockpit.tui.operations import LaneTarget
from cockpit.tui.screens.confirm import ConfirmScreen
from tests.tui import scene
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


@dataclass
class FailingSwitch(ScriptedOperations):
    """A switch that fails after replacing the serving lane, and a `restore` that undoes it."""

    replaced: LaneTarget | None = None

    async def _failing(self, target: LaneTarget) -> AsyncIterator[OpEvent]:
        where = {"lane": target.lane, "cluster": target.cluster}
        yield Planned(op="switch", steps=("launch",), summary="switch", **where)
        self.started.append(("switch", target.lane))
        self.replaced = LaneTarget(scene.LANE, scene.CLUSTER)
        yield Finished.failed("switch", "rank 1 on dgx2 failed", **where)

    def switch(self, target: LaneTarget) -> AsyncIterator[OpEvent]:
        return self._failing(target)

    def restorable(self) -> LaneTarget | None:
        return self.replaced

    def restore(self, target: LaneTarget) -> AsyncIterator[OpEvent]:
        return self._op("restore", target)


async def test_a_failed_switch_offers_the_restore_key(make_app: Callable[..., CockpitApp]) -> None:
    ops = FailingSwitch()
    app = make_app(operations=ops)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("r")
        await pilot.pause(0.1)
        assert any("no failed switch" in n.message for n in app._notifications)
        await select_lane(app, "qwen3-0.6b-2x@dgx56-switch")
        await pilot.press("w", "y")
        await app.workers.wait_for_complete()
        await pilot.pause(0.1)
        assert any("press r to restore the previous lane" in n.message for n in app._notifications)
        await pilot.press("r")
        await pilot.pause(0.1)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await app.workers.wait_for_complete()
        assert ops.started[-1] == ("restore", scene.LANE)
