"""Refusals that carry their fix as a key, and confirmations that say what the nodes report."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from textual.widgets import Button, DataTable, Static
from textual.widgets._footer import FooterKey

from cockpit.config import load_inventory
from cockpit.config.inventory import PROJECT_RECIPES
from cockpit.errors import EXIT_REFUSED
from cockpit.events import Finished, Notice, OpEvent, Severity
from cockpit.tui.app import CockpitApp
from cockpit.tui.operations import Fix, LaneTarget, fix_for
from cockpit.tui.screens.confirm import ConfirmScreen
from cockpit.tui.settings import TuiSettings
from cockpit.tui.widgets.lanes import LanesPane
from tests.tui import scene
from tests.tui.scripted_ops import ScriptedOperations
from tests.tui.test_keys import select_lane

QWEN = LaneTarget("qwen3-0.6b-2x", "dgx56-switch")  # stopped in the scene
SERVING = f"{scene.LANE}@{scene.CLUSTER}"


def image_refusal(target: LaneTarget) -> list[OpEvent]:
    kw = {"op": "launch", "lane": target.lane, "cluster": target.cluster}
    return [
        Notice(severity=Severity.ERROR, message="image … is not present by digest on dgx6 — fix: "
               "cockpit sync-image …", node="dgx6", check="image", **kw),
        Finished.refused("launch", "preflight refused: image not present on dgx6",
                         lane=target.lane, cluster=target.cluster),
    ]  # fmt: skip


def test_only_a_launch_refused_for_its_image_alone_has_an_operation_as_its_fix() -> None:
    refused = Finished(op="launch", ok=False, summary="x", exit_code=EXIT_REFUSED,
                       lane=QWEN.lane, cluster=QWEN.cluster)  # fmt: skip
    assert fix_for(refused, {"image"}) == Fix("sync_launch", QWEN, "sync the image, then launch")
    assert fix_for(refused, {"image", "memory"}) is None  # syncing would not mend the memory
    assert fix_for(refused, set()) is None
    failed = Finished(op="launch", ok=False, summary="x", lane=QWEN.lane, cluster=QWEN.cluster)
    assert fix_for(failed, {"image"}) is None  # failed on the nodes, not refused


async def test_a_launch_refused_for_its_image_offers_the_sync_and_launch_key(
    make_app: Callable[..., CockpitApp],
) -> None:
    ops = ScriptedOperations(events={"launch": image_refusal})
    app = make_app(operations=ops)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.3)
        assert "F" not in {k.key for k in app.screen.query(FooterKey)}  # nothing to mend yet
        await select_lane(app, f"{QWEN.lane}@{QWEN.cluster}")
        await pilot.press("l", "y")
        await pilot.pause(0.4)
        notices = [n.message for n in app._notifications]  # type: ignore[attr-defined]
        assert "press F to sync the image, then launch" in notices[-1], notices
        assert "F" in {k.key for k in app.screen.query(FooterKey)}
        assert any("refusal's fix" in c.title for c in app.get_system_commands(app.screen))
        await pilot.press("F")
        await pilot.pause(0.2)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await pilot.pause(0.4)
        assert ops.started == [("launch", QWEN.lane), ("sync_launch", QWEN.lane)]
        assert "F" not in {k.key for k in app.screen.query(FooterKey)}  # a new run cleared it
        assert not any("refusal's fix" in c.title for c in app.get_system_commands(app.screen))


async def test_a_launch_of_a_serving_lane_is_confirmed_only_with_a_warning(
    make_app: Callable[..., CockpitApp],
) -> None:
    app = make_app(operations=ScriptedOperations())
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.3)
        await select_lane(app, SERVING)
        await pilot.press("l")
        await pilot.pause(0.3)
        assert isinstance(app.screen, ConfirmScreen)
        warning = str(app.screen.query_one("#dialog-warning", Static).render())
        assert "serving already" in warning and "s stops it" in warning
        assert str(app.screen.query_one("#yes", Button).label) == "Run it anyway (y)"
        await pilot.press("n")
        await select_lane(app, f"{QWEN.lane}@{QWEN.cluster}")
        await pilot.press("l")
        await pilot.pause(0.3)
        assert isinstance(app.screen, ConfirmScreen)
        assert not app.screen.query("#dialog-warning")
        assert str(app.screen.query_one("#yes", Button).label) == "Run it (y)"


async def test_a_broken_cluster_is_said_and_its_lanes_left_out(tmp_path: Path) -> None:
    """Issue 15: one typo in clusters.toml refused the whole TUI; now the broken cluster is said
    in a notice and at the Lanes pane's foot, and the other lanes are there to use."""
    inv = tmp_path / "inv"
    shutil.copytree(PROJECT_RECIPES, inv)
    clusters = inv / "clusters.toml"
    clusters.write_text(
        clusters.read_text().replace('fabric = "direct-pair"', 'fabirc = "direct-pair"', 1)
    )
    inventory = load_inventory(inv, partial=True)
    settings = TuiSettings(tmp_path / "tui.toml", None, {})
    app = CockpitApp(inventory, settings=settings, clock=lambda: scene.T0, fleet_label="broken")
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.3)
        notices = [n.message for n in app._notifications]  # type: ignore[attr-defined]
        assert any(
            m.startswith("cluster 2nodes-dac: broken: ") and "fabirc" in m and "left out" in m
            for m in notices
        ), notices
        lanes = app.screen.query_one(LanesPane)
        assert lanes.border_subtitle == "BROKEN, left out: 2nodes-dac (cockpit validate)"
        keys = [str(k.value) for k in lanes.query_one(DataTable).rows]
        assert keys and not any(k.endswith("@2nodes-dac") for k in keys)
        assert any(k.endswith("@dgx56-switch") for k in keys)
