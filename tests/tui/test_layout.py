"""Layout at the widths operators use between the stacked 80-column screen and a wide one."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.widgets import DataTable

from cockpit.tui.app import CockpitApp
from cockpit.tui.widgets.nodes import COLUMNS


@pytest.mark.parametrize("width", [120, 160])
async def test_the_nodes_pane_keeps_memory_on_screen(
    make_app: Callable[..., CockpitApp], width: int
) -> None:
    """A Nodes pane too narrow for every column cuts the clocks and the history, never memory."""
    app = make_app()
    async with app.run_test(size=(width, 40)) as pilot:
        await pilot.pause(0.2)
        table = app.screen.query_one("#nodes-table", DataTable)
        widths = [c.get_render_width(table) for c in table.ordered_columns]
        through_memory = sum(widths[: COLUMNS.index("memory") + 1])
        assert "UMA" in str(table.get_row_at(0)[COLUMNS.index("memory")])  # a figure to show
        assert through_memory <= table.scrollable_content_region.width, (width, widths)


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (160, 48), (200, 60)])
async def test_the_lanes_pane_fits_its_width_names_whole_and_the_state_flexing(
    make_app: Callable[..., CockpitApp], size: tuple[int, int]
) -> None:
    """No horizontal scroll at any size: the endpoint and the last bench go first (enter shows
    them), lane names are never cut (their middle tells 2x from 4x), and the state column takes
    the room to spare, so a wide screen shows a long state whole."""
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.3)
        table = app.screen.query_one("#lanes-table", DataTable)
        labels = [str(c.label) for c in table.ordered_columns]
        widths = [c.get_render_width(table) for c in table.ordered_columns]
        assert sum(widths) <= table.scrollable_content_region.width, (size, labels, widths)
        rows = [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]
        assert "mimo26-flash-mopd-2x-sparkring" in [r[0] for r in rows]
        state = [r[labels.index("state")] for r in rows]
        if size[0] >= 160:
            assert "syncing load on dgx1 44%" in state
            assert "last bench" in labels and "tg 60.2 t/s @8K c1" in [r[-1] for r in rows]
        if size[0] >= 200:
            assert "endpoint" in labels
