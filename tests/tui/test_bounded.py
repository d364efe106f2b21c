"""A table's render caches hold what it can show: Textual's keep 1,000 lines and 10,000 cells,
keyed by the table's update count, and every full garbage collection walks them."""

from __future__ import annotations

from textual.app import App, ComposeResult

from cockpit.tui.widgets.bounded import BoundedTable, lines_kept

COLUMNS = ("node", "gpu", "memory")


class OneTable(App[None]):
    def compose(self) -> ComposeResult:
        yield BoundedTable(columns=len(COLUMNS), id="table")


async def test_a_table_updated_all_day_keeps_only_what_it_shows() -> None:
    """60 updates of a 100-row table, each painted: every update's lines and cells were kept
    (Textual's caches are keyed by the update count), until 1,000 lines and 10,000 cells."""
    app = OneTable()
    async with app.run_test(size=(80, 20)) as pilot:
        table = app.query_one(BoundedTable)
        keys = table.add_columns(*COLUMNS)
        for row in range(100):
            table.add_row(f"dgx{row}", "0%", "1 GiB", key=str(row))
        await pilot.pause()
        for k in range(60):
            table.update_cell(str(k % 10), keys[1], f"{k}%")
            await pilot.pause(0.02)
        kept = lines_kept(table.size.height)
        assert kept < 100  # fewer than the rows: the bound is the height's, not the table's
        assert 0 < len(table._line_cache) <= kept
        assert 0 < len(table._row_render_cache) <= kept
        assert 0 < len(table._cell_render_cache) <= kept * len(COLUMNS)
        assert table.get_row("9")[1] == "59%"
        table.move_cursor(row=99)  # a jump to the end renders the lines at the bottom
        await pilot.pause(0.05)
        assert len(table._line_cache) <= kept
