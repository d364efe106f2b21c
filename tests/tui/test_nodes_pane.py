"""The Nodes pane rebuilds the rows of the nodes whose shown facts changed, and only those."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
from rich.text import Text
from textual.widgets import DataTable

from cockpit.telemetry.host import HostLoad
from cockpit.tui.app import CockpitApp
from cockpit.tui.screens.main import MainScreen
from cockpit.tui.state.inputs import NodeSampled, RankOnNode
from cockpit.tui.state.views import NodeHealth, NodeView
from cockpit.tui.widgets import nodes
from cockpit.tui.widgets.nodes import NodesPane, node_row
from cockpit.tui.widgets.palette import Palette, palette_of
from tests.tui import scene

SIZE = (160, 48)


def table_cells(pane: NodesPane) -> dict[str, list[str]]:
    table: DataTable[Text] = pane.query_one(DataTable)
    return {str(key.value): [cell.plain for cell in table.get_row(key)] for key in table.rows}


async def test_a_repaint_rebuilds_only_the_rows_whose_facts_changed(
    make_app: Callable[..., CockpitApp], monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app()
    built: list[str] = []

    def counting(node: NodeView, colours: Palette) -> tuple[Text, ...]:
        built.append(node.name)
        return node_row(node, colours)

    monkeypatch.setattr(nodes, "node_row", counting)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, MainScreen)
        pane = screen.query_one(NodesPane)
        names = {n.name for n in app.store.snapshot(scene.T0).nodes}
        assert set(built) == names  # the first paint builds every row

        built.clear()
        dgx1 = [i for i in scene.node_samples(scene.inventory())
                if isinstance(i, NodeSampled) and i.node == "dgx1"][-1]  # fmt: skip
        assert dgx1.gpu is not None
        app.store.apply(replace(dgx1, at=scene.T0 + 0.5, gpu=replace(dgx1.gpu, temperature_c=99)))
        snap = app.store.snapshot(scene.T0 + 1.0)
        pane.show(snap, screen.ctx)
        live = {n.name for n in snap.nodes if n.health is NodeHealth.LIVE}
        assert "dgx3" in built  # STALE: the age it shows moved
        assert [name for name in built if name in live] == ["dgx1"]  # the others: unchanged

        colours = palette_of(app)
        shown = len(pane.query_one(DataTable).ordered_columns)  # the host's hidden at 160
        want = {n.name: [t.plain for t in node_row(n, colours)][:shown] for n in snap.nodes}
        assert table_cells(pane) == want
        assert "99°C" in table_cells(pane)["dgx1"]


def test_a_rank_cell_says_running_orphaned_exited_or_never_started() -> None:
    colours = Palette("green", "yellow", "red", "cyan", "grey50")
    lane = "qwen3-0.6b-2x"

    def cell(rank: RankOnNode) -> str:
        node = NodeView("dgx1", NodeHealth.LIVE, 0.0, None, None, None, (rank,), ())
        return node_row(node, colours)[2].plain

    assert cell(RankOnNode(lane, "c", 0)) == f"{lane}/r0"
    assert cell(RankOnNode(lane, "c", 0, orphaned="no lock")) == f"{lane}/r0 ORPHANED"
    assert cell(RankOnNode(lane, "c", 1, running=False, exit_code=137)) == f"{lane}/r1 exited (137)"
    never = RankOnNode(lane, "c", 1, running=False, started=False)
    assert cell(never) == f"{lane}/r1 never started"


def test_the_host_columns_show_cpu_links_and_swap_once_two_samples_gave_rates() -> None:
    colours = Palette("green", "yellow", "red", "cyan", "grey50")

    def cells(host: HostLoad | None) -> list[str]:
        node = NodeView("dgx1", NodeHealth.LIVE, 0.0, None, None, None, (), (), host=host)
        return [t.plain for t in node_row(node, colours)][-3:]

    assert cells(None) == ["–", "–", "–"]
    assert cells(HostLoad(12.4, 1.5 * 1024**2, 40 * 1024, 0)) == ["12%", "1.5M 40K", "0"]
    assert cells(HostLoad(None, None, None, 2 * 1024**3)) == ["–", "–", "2.0G"]
