"""`cockpit demo`'s opening act in the app (Pilot, recorded scene): the demo lane is launched
without a confirmation once the fleet answers, `g` stops and starts the load, and keys that cannot
act are not offered (the load outside the demo, node-changing keys when read-only)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from textual.widgets._footer import FooterKey

from cockpit.bench.load import LoadCount, LoadShape
from cockpit.tui.app import CockpitApp
from cockpit.tui.demo import Demo
from cockpit.tui.operations import LaneTarget
from cockpit.tui.screens.confirm import ConfirmScreen
from tests.tui import scene
from tests.tui.scripted_ops import ScriptedOperations

LOADED: list[str] = []  # the endpoints the stand-in load was started on


async def stand_in_load(
    endpoint: str, count: LoadCount, shape: LoadShape, api_key: str | None
) -> None:
    """The scene's endpoints are not on loopback: nothing may be sent to them."""
    LOADED.append(endpoint)
    await asyncio.Event().wait()


DEMO = Demo(LaneTarget(scene.LANE, scene.CLUSTER), load=stand_in_load)


def footer_keys(app: CockpitApp) -> set[str]:
    return {key.key for key in app.screen.query(FooterKey)}


def load_running(app: CockpitApp) -> bool:
    return any(w.group == "load" and w.is_running for w in app.workers)


async def test_the_demo_launches_its_lane_unasked_and_g_toggles_the_load(
    make_app: Callable[..., CockpitApp],
) -> None:
    ops = ScriptedOperations()
    app = make_app(operations=ops, demo=DEMO)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(1.2)  # the reveal: the first useful frame, or REVEAL_AFTER_S
        while any(w.group == "ops" and w.is_running for w in app.workers):
            await pilot.pause(0.05)
        assert ops.started == [("launch", scene.LANE)]
        assert not isinstance(app.screen, ConfirmScreen)
        assert "g" in footer_keys(app) and load_running(app)
        await pilot.pause(0.6)  # the load looks at its lane every WATCH_S
        assert LOADED == ["http://dgx5.example.lan:30000"]  # the serving lane's endpoint
        await pilot.press("g")
        await pilot.pause(0.1)
        assert not load_running(app)
        assert "demo load stopped" in [n.message for n in app._notifications][-1]  # type: ignore[attr-defined]
        await pilot.press("g")
        await pilot.pause(0.1)
        assert load_running(app)


async def test_without_a_demo_there_is_no_load_key(make_app: Callable[..., CockpitApp]) -> None:
    ops = ScriptedOperations()
    app = make_app(operations=ops)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(1.2)
        assert ops.started == [] and not load_running(app)
        assert "g" not in footer_keys(app)
        await pilot.press("g")
        await pilot.pause(0.1)
        assert not load_running(app)
        rows = app.screen.key_rows()  # type: ignore[attr-defined]
        assert not any("load" in text for _, text, _ in rows)
        commands = [c.title for c in app.get_system_commands(app.screen)]
        assert not any("load" in title for title in commands)


async def test_read_only_offers_no_node_changing_key_yet_each_says_why(
    make_app: Callable[..., CockpitApp],
) -> None:
    app = make_app(operations=ScriptedOperations(), readonly=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.3)
        shown = footer_keys(app)
        assert not shown & {"l", "s", "y", "b", "w"}, shown
        assert {"m", "t", "q"} <= shown
        commands = [c.title for c in app.get_system_commands(app.screen)]
        assert not any(title.startswith("Launch") for title in commands), commands
        await pilot.press("l")
        await pilot.pause(0.1)
        notices = [n.message for n in app._notifications]  # type: ignore[attr-defined]
        assert "read-only: launch is disabled" in notices[-1]
