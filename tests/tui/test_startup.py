"""Start-up: the first useful frame is a painted LIVE node with GPU and memory figures; the later
panes lay out their content after it (or after REVEAL_AFTER_S when no node answers); `fleet_app`
probes the nodes before the app runs."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from rich.text import Text
from textual.widgets import DataTable

from cockpit.config import load_inventory
from cockpit.ssh.inventory import pool_for
from cockpit.tui.app import CockpitApp
from cockpit.tui.feeds.fleet import FleetFeed
from cockpit.tui.launch import fleet_app
from cockpit.tui.messages import NodePolled
from cockpit.tui.screens import main as main_screen
from cockpit.tui.screens.main import REVEAL_AFTER_S
from cockpit.tui.settings import TuiSettings
from cockpit.tui.state import NodeSampled
from cockpit_sim.engine.text import TOKENIZER_DIR
from cockpit_sim.fleet import SimFleet
from tests.tui import scene


def row_text(app: CockpitApp, node: str) -> str:
    table = app.screen.query_one("#nodes-table", DataTable)
    return " ".join(c.plain if isinstance(c, Text) else str(c) for c in table.get_row(node))


@pytest.mark.usefixtures("collector_paused")
async def test_first_useful_frame_needs_gpu_and_memory(
    make_app: Callable[..., CockpitApp], monkeypatch: pytest.MonkeyPatch
) -> None:
    # only the first useful frame may reveal the later panes here: on a loaded host the app's
    # own start can outlast REVEAL_AFTER_S, whose timer would reveal them first (seen in CI)
    monkeypatch.setattr(main_screen, "REVEAL_AFTER_S", 60.0)
    app = make_app(with_scene=False)
    first = next(s for s in scene.node_samples(app.store.inventory) if isinstance(s, NodeSampled))
    sample = replace(first, at=scene.T0)  # heard just now (the app's clock): LIVE
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.1)
        assert app.screen.has_class("-starting")
        assert not app.screen.query_one("#log-tail").display  # later panes: borders only
        app.post_message(NodePolled(replace(sample, gpu=None)))  # meminfo came first: not enough
        await pilot.pause(0.1)
        assert app.first_useful_frame is None
        assert not gc.isenabled()  # still starting
        app.post_message(NodePolled(sample))
        deadline = time.monotonic() + 5.0  # painted on the next repaint tick; slower under load
        while app.first_useful_frame is None and time.monotonic() < deadline:
            await pilot.pause(0.05)
        assert app.first_useful_frame is not None
        assert "°C" in row_text(app, sample.node) and "UMA" in row_text(app, sample.node)
        assert not app.screen.has_class("-starting")
        assert app.screen.query_one("#log-tail").display
        assert gc.isenabled()  # start-up over: collecting again


@pytest.mark.usefixtures("collector_paused")
async def test_later_panes_appear_when_no_node_answers(
    make_app: Callable[..., CockpitApp],
) -> None:
    app = make_app(with_scene=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(REVEAL_AFTER_S + 0.3)
        assert app.first_useful_frame is None
        assert not app.screen.has_class("-starting")
        assert app.screen.query_one("#log-tail").display
        assert gc.isenabled()  # a fleet that never answers does not keep the collector off


async def test_fleet_app_probes_before_the_app_runs(
    fleet_factory: Callable[..., SimFleet], tmp_path: Path
) -> None:
    fleet = fleet_factory(2)
    inventory = load_inventory(fleet.inventory_dir)
    settings = TuiSettings(tmp_path / "tui.toml")
    async with (
        pool_for(inventory) as pool,
        fleet_app(
            inventory,
            pool,
            settings,
            reports_dir=tmp_path / "reports",
            tokenizer_dir=TOKENIZER_DIR,
            persist_theme=False,
        ) as app,
    ):
        feed = app.feeds[0]
        assert isinstance(feed, FleetFeed) and feed.poller is not None
        await feed.poller.wait_first_round(30)  # the nodes answer while no app runs yet
        assert all(f.gpus and f.meminfo for f in feed.poller.facts().values())
        async with app.run_test(size=(160, 48)) as pilot:
            deadline = time.monotonic() + 10
            while app.first_useful_frame is None:
                assert time.monotonic() < deadline, "no useful frame"
                await pilot.pause(0.05)
            assert all("°C" in row_text(app, node) for node in inventory.nodes)
            app.exit()
