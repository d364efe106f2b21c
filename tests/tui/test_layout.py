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
