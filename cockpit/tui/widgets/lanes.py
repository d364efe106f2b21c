"""Lanes pane: every recipe × cluster with its state, endpoint, image presence and last bench."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.message import Message
from textual.widgets import DataTable

from cockpit.config.clusters import Breakage
from cockpit.tui.fit import end, fit_columns
from cockpit.tui.state.parts import Part
from cockpit.tui.state.views import FleetSnapshot, LaneView
from cockpit.tui.widgets.bounded import BoundedTable
from cockpit.tui.widgets.palette import palette_of
from cockpit.tui.widgets.pane import FittedPane

COLUMNS = ("lane", "cluster", "state", "endpoint", "image", "last bench")
FLOORS = (40, 10, 16, 0, 7, 0)  # cells no column gives up; 0: dropped whole (enter shows it)
SHRINK_ORDER = (3, 5, 1, 2, 0)  # endpoint, last bench, cluster, state, lane (names stay whole:
# a cut name hides what tells lanes apart, e.g. the 2x of mimo26-flash-mopd-2x-sparkring)
STATE = COLUMNS.index("state")  # takes the room to spare: a failure reason whole (enter: all)


def orphans_line(lanes: tuple[LaneView, ...]) -> str:
    """The pane's foot while a lane runs with no cockpit looking after it: what stops it (its
    row says which lane; lane keys would not fit beside the command at 160 columns)."""
    fixes = ", ".join(dict.fromkeys(lane.stop_fix for lane in lanes if lane.orphaned))
    return f"ORPHANED: s on its row stops it ({fixes})" if fixes else ""


def broken_line(broken: tuple[Breakage, ...]) -> str:
    """The pane's foot while the inventory has broken clusters: their lanes are not listed (the
    start-up notice says why; `cockpit validate` lists every mistake)."""
    names = sorted({c for b in broken for c in b.clusters})
    names += sorted(f"node {b.node}" for b in broken if b.node and not b.clusters)
    return f"BROKEN, left out: {', '.join(names)} (cockpit validate)" if names else ""


class LanesPane(FittedPane):
    """Its cursor row is the selected lane: every lane key (l, s, y, b, w) acts on it."""

    FIRST_FRAME = True
    READS = frozenset({Part.LANES})

    class Selected(Message):
        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    def __init__(self) -> None:
        super().__init__("Lanes", id="lanes")
        self._shown: tuple[tuple[LaneView, ...], str, int] | None = None  # lanes, theme, width

    def compose(self) -> ComposeResult:
        table: BoundedTable[Text | str] = BoundedTable(
            columns=len(COLUMNS), zebra_stripes=True, id="lanes-table"
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

    def fill(self, snap: FleetSnapshot, width: int) -> None:
        """The rows, their columns fitted to `width` (`fit_columns`)."""
        table = self.table
        shown = (snap.lanes, self.app.theme, width)
        if shown == self._shown:
            return
        self._shown = shown
        colours = palette_of(self.app)
        rows = []
        for lane in snap.lanes:
            image = (
                ("?", colours.muted)
                if lane.image_ok is None
                else ("all", colours.ok)
                if lane.image_ok
                else ("missing", colours.warn)
            )
            endpoint = lane.endpoint.removeprefix("http://") if lane.endpoint else "–"
            texts = (lane.lane, lane.cluster, lane.state_text, endpoint, image[0],
                     lane.bench_headline or "–")  # fmt: skip
            state = f"bold {colours.error}" if lane.orphaned else colours.phase(lane.phase.value)
            rows.append((lane.key, texts, {STATE: state, COLUMNS.index("image"): image[1]}))
        natural = [
            max([len(label), *(len(texts[i]) for _, texts, _ in rows)])
            for i, label in enumerate(COLUMNS)
        ]
        pad = 2 * table.cell_padding
        widths = (
            fit_columns(natural, FLOORS, width, SHRINK_ORDER, STATE, pad)
            if width
            else natural  # not laid out yet: the next show (after the layout) fits them
        )
        shown = [i for i, w in enumerate(widths) if w]
        cursor = table.cursor_row
        # Columns re-fit their content on every change (a long failure reason is gone later).
        # Widths are set explicitly: auto-width columns re-added after a clear fall back to
        # their labels' widths and truncate every cell.
        table.clear(columns=True)
        for i in shown:
            table.add_column(end(COLUMNS[i], widths[i]), width=widths[i])
        for key, texts, styles in rows:
            cells = [Text(end(texts[i], widths[i]), style=styles.get(i, "")) for i in shown]
            table.add_row(*cells, key=key)
        if table.row_count:
            table.move_cursor(row=min(cursor, table.row_count - 1), animate=False)
        broken = broken_line(self.cockpit.store.inventory.broken)
        self.retitle(subtitle=orphans_line(snap.lanes) or broken)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if event.row_key.value is not None:
            self.post_message(self.Selected(event.row_key.value))
