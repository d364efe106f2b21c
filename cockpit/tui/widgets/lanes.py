"""Lanes pane: every recipe × cluster with its state, endpoint, image presence and last bench."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.message import Message
from textual.widgets import DataTable

from cockpit.tui.state.views import FleetSnapshot, LaneView
from cockpit.tui.widgets.palette import palette_of
from cockpit.tui.widgets.pane import Pane, ViewContext

COLUMNS = ("lane", "cluster", "state", "endpoint", "image", "last bench")
STATE_WIDTH = 28  # a failure reason is cut here; enter shows it whole


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def orphans_line(lanes: tuple[LaneView, ...]) -> str:
    """The pane's foot while a lane runs with no cockpit looking after it: what stops it (its
    row says which lane; lane keys would not fit beside the command at 160 columns)."""
    fixes = ", ".join(dict.fromkeys(lane.stop_fix for lane in lanes if lane.orphaned))
    return f"ORPHANED: s on its row stops it ({fixes})" if fixes else ""


class LanesPane(Pane):
    """Its cursor row is the selected lane: every lane key (l, s, y, b, w) acts on it."""

    FIRST_FRAME = True

    class Selected(Message):
        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    def __init__(self) -> None:
        super().__init__("Lanes", id="lanes")
        self._shown: tuple[LaneView, ...] = ()
        self._theme = ""

    def compose(self) -> ComposeResult:
        table: DataTable[Text | str] = DataTable(
            cursor_type="row", zebra_stripes=True, id="lanes-table"
        )
        table.add_columns(*COLUMNS)
        yield table

    @property
    def table(self) -> DataTable[Text | str]:
        return self.query_one(DataTable)

    @property
    def selected_key(self) -> str | None:
        table = self.table
        if not table.row_count:
            return None
        row_key, _ = table.coordinate_to_cell_key(table.cursor_coordinate)
        return row_key.value

    def show(self, snap: FleetSnapshot, ctx: ViewContext) -> None:
        if snap.lanes == self._shown and self.app.theme == self._theme:
            return
        self._shown, self._theme = snap.lanes, self.app.theme
        colours = palette_of(self.app)
        rows = []
        for lane in snap.lanes:
            style = f"bold {colours.error}" if lane.orphaned else colours.phase(lane.phase.value)
            state = Text(_clip(lane.state_text, STATE_WIDTH), style=style)
            image = (
                Text("?", style=colours.muted)
                if lane.image_ok is None
                else Text("all", style=colours.ok)
                if lane.image_ok
                else Text("missing", style=colours.warn)
            )
            endpoint = lane.endpoint.removeprefix("http://") if lane.endpoint else "–"
            cells = (lane.lane, lane.cluster, state, endpoint, image, lane.bench_headline or "–")
            rows.append((lane.key, cells))
        table = self.table
        cursor = table.cursor_row
        # Columns re-fit their content on every change (a long failure reason is gone later).
        # Widths are set explicitly: auto-width columns re-added after a clear fall back to
        # their labels' widths and truncate every cell.
        table.clear(columns=True)
        for index, label in enumerate(COLUMNS):
            width = max([len(label), *(Text(str(c[index])).cell_len for _, c in rows)])
            table.add_column(label, width=width)
        for key, cells in rows:
            table.add_row(*cells, key=key)
        if table.row_count:
            table.move_cursor(row=min(cursor, table.row_count - 1), animate=False)
        self.retitle(subtitle=orphans_line(snap.lanes))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if event.row_key.value is not None:
            self.post_message(self.Selected(event.row_key.value))
