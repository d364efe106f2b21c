"""Nodes pane: per node reachability, lane/rank, GPU figures, memory and a utilisation sparkline."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.message import Message
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from cockpit.redact import shown
from cockpit.tui.render import num, sparkline
from cockpit.tui.state.inputs import RankOnNode
from cockpit.tui.state.views import FleetSnapshot, NodeHealth, NodeView, fmt_duration
from cockpit.tui.widgets.palette import Palette, palette_of
from cockpit.tui.widgets.pane import Pane, ViewContext

COLUMNS = ("node", "link", "lane/rank", "gpu", "memory", "temp", "power", "clock", "util history")
"""Most needed first: a pane too narrow for every column (a 120-column terminal) cuts the clocks
and the sparkline, not the memory figure."""
SPARK_WIDTH = 12
Cells = tuple[tuple[str, object], ...]


def _health(node: NodeView, colours: Palette) -> Text:
    if node.health is NodeHealth.LIVE:
        return Text("up", style=colours.ok)
    if node.health is NodeHealth.STALE:
        age = fmt_duration(node.age_s) if node.age_s is not None else "?"
        return Text(f"STALE {age}", style=f"bold {colours.warn}")
    if node.health is NodeHealth.DOWN:
        since = f" {fmt_duration(node.age_s)}" if node.age_s is not None else ""
        return Text(f"DOWN{since}", style=f"bold {colours.error}")
    return Text("…", style=colours.muted)


def _rank(rank: RankOnNode) -> str:
    """`lane/rN`: the lane as the container's label names it (a node's text: shown safely)."""
    name = shown(f"{rank.lane.split('-sparkring')[0]}/r{rank.rank}")
    if rank.running:
        return f"{name} ORPHANED" if rank.orphaned else name
    return f"{name} exited" + (f" ({rank.exit_code})" if rank.exit_code is not None else "")


def row_inputs(node: NodeView) -> tuple[object, ...]:
    """What `node_row` reads: a live node's age moves every snapshot and is not shown."""
    dim = node.health in (NodeHealth.STALE, NodeHealth.DOWN)
    age = fmt_duration(node.age_s) if dim and node.age_s is not None else None
    return (node.name, node.health, age, node.gpu, node.memory, node.ranks, node.ranks_known,
            node.util_history)  # fmt: skip


def node_row(node: NodeView, colours: Palette) -> tuple[Text, ...]:
    """One table row, from this node's own facts only. A STALE node keeps its last values,
    greyed; a DOWN one shows none (they would read as live)."""
    dim = node.health in (NodeHealth.STALE, NodeHealth.DOWN)
    style = colours.muted if dim else ""
    down = node.health is NodeHealth.DOWN
    gpu, mem = (None, None) if down else (node.gpu, node.memory)
    if down:
        ranks = "?"
    elif not node.ranks_known:
        ranks = "…"  # its container list has not come yet: "–" would say it runs nothing
    else:
        ranks = ", ".join(_rank(r) for r in node.ranks) or "–"
    memory = "–"
    if mem:
        uma = " UMA" if mem.source == "meminfo" else ""  # unified memory: the OS view
        memory = f"{mem.used_mib / 1024:.0f}/{mem.total_mib / 1024:.0f}G{uma}"

    cells = (
        Text(node.name, style="bold" if not dim else colours.muted),
        _health(node, colours),
        Text(ranks, style=style),
        Text(num(gpu.utilization_pct if gpu else None, 0, "%"), style=style),
        Text(memory, style=style),
        Text(num(gpu.temperature_c if gpu else None, 0, "°C"), style=style),
        Text(num(gpu.power_w if gpu else None, 0, "W"), style=style),
        Text(num(gpu.clock_sm_mhz if gpu else None, 0, "MHz"), style=style),
        Text(
            "" if down else sparkline(node.util_history, SPARK_WIDTH, 0, 100),
            style=style or colours.accent,
        ),
    )
    return cells


class NodesPane(Pane):
    FIRST_FRAME = True

    class Chosen(Message):
        """Enter on a node: show its log."""

        def __init__(self, node: str) -> None:
            super().__init__()
            self.node = node

    def __init__(self) -> None:
        super().__init__("Nodes", id="nodes")
        self._shown: dict[str, Cells] = {}  # node → its cells
        self._rows: dict[str, tuple[tuple[object, ...], tuple[Text, ...], Cells]] = {}
        """node → (its row_inputs, its row, its cells): at 128 nodes, building every row at
        each repaint was most of the idle TUI's CPU, and a repaint changes a few nodes."""
        self._columns: list[ColumnKey] = []
        self._colours: Palette | None = None

    def compose(self) -> ComposeResult:
        table: DataTable[Text] = DataTable(cursor_type="row", id="nodes-table")
        self._columns = table.add_columns(*COLUMNS)
        yield table

    def show(self, snap: FleetSnapshot, ctx: ViewContext) -> None:
        colours = palette_of(self.app)
        if colours != self._colours:
            self._rows, self._colours = {}, colours
        made = {node.name: self._row(node, colours) for node in snap.nodes}
        self._rows = made
        rows = {name: row for name, (_, row, _) in made.items()}
        shown = {name: cells for name, (_, _, cells) in made.items()}
        if shown == self._shown:
            return  # e.g. only the ages of live nodes moved: nothing visible changed
        table = self.query_one(DataTable)
        if list(shown) == list(self._shown):
            # the same nodes: only the cells that changed (one node's sample changes a few
            # cells; rebuilding the table would measure and lay out every cell again)
            for name, row in rows.items():
                cells = zip(self._columns, row, self._shown[name], shown[name], strict=True)
                for column, cell, before, now in cells:
                    if before != now:
                        table.update_cell(name, column, cell, update_width=True)
        else:
            cursor = table.cursor_row
            table.clear()
            for name, row in rows.items():
                table.add_row(*row, key=name)
            if table.row_count:
                table.move_cursor(row=min(cursor, table.row_count - 1), animate=False)
        self._shown = shown
        down = [n.name for n in snap.nodes if n.health in (NodeHealth.STALE, NodeHealth.DOWN)]
        self.retitle(subtitle=f"unreachable: {', '.join(down)}" if down else "")

    def _row(
        self, node: NodeView, colours: Palette
    ) -> tuple[tuple[object, ...], tuple[Text, ...], Cells]:
        inputs = row_inputs(node)
        known = self._rows.get(node.name)
        if known is not None and known[0] == inputs:
            return known
        row = node_row(node, colours)
        return inputs, row, tuple((t.plain, t.style) for t in row)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value is not None:
            self.post_message(self.Chosen(event.row_key.value))
