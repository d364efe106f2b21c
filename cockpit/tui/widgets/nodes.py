"""Nodes pane: per node reachability, lane/rank, GPU figures, memory and a utilisation sparkline."""

from __future__ import annotations

from typing import NamedTuple

from rich.cells import cell_len
from rich.text import Text
from textual.app import ComposeResult
from textual.message import Message
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from cockpit.redact import shown
from cockpit.status.lock_view import LockView
from cockpit.telemetry.host import HostLoad, fmt_bytes
from cockpit.tui.render import num, sparkline
from cockpit.tui.state.inputs import RankOnNode
from cockpit.tui.state.parts import Part
from cockpit.tui.state.views import FleetSnapshot, NodeHealth, NodeView, fmt_duration
from cockpit.tui.widgets.bounded import BoundedTable
from cockpit.tui.widgets.palette import Palette, palette_of
from cockpit.tui.widgets.pane import FittedPane

COLUMNS = ("node", "link", "lane/rank", "gpu", "memory", "temp", "power", "clock", "util history",
           "cpu", "net ↓ ↑", "swap")  # fmt: skip
"""Most needed first: a pane too narrow for every column (a 120-column terminal) cuts the clocks
and the sparkline, not the memory figure."""
HOST_COLUMNS = 3
"""The last three, the host's CPU, links and swap, show whole or not at all: on a wide terminal
or with the pane maximised (`m`)."""
SPARK_WIDTH = 12
DIMMED = (NodeHealth.STALE, NodeHealth.DOWN)  # shown greyed, with the age of their last sample


class Row(NamedTuple):
    """A node's row as shown, and what it was made from."""

    inputs: tuple[object, ...]  # `row_inputs`
    colours: Palette
    texts: tuple[Text, ...]
    cells: tuple[tuple[str, object], ...]  # each text's plain string and style, to compare


def _row(node: NodeView, colours: Palette, on_screen: Row | None) -> Row:
    """The row on screen when nothing it shows changed, else a new one."""
    inputs = row_inputs(node)
    if on_screen is not None and on_screen.inputs == inputs and on_screen.colours == colours:
        return on_screen
    texts = node_row(node, colours)
    return Row(inputs, colours, texts, tuple((t.plain, t.style) for t in texts))


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
    if not rank.started:
        return f"{name} never started"
    return f"{name} exited" + (f" ({rank.exit_code})" if rank.exit_code is not None else "")


def lock_note(lock: LockView | None) -> str:
    """Whose operation holds the node (any cockpit's), or that its lock is stale; '' if none."""
    if lock is None:
        return ""
    what = f"{lock.operation} {lock.lane}".strip()
    who = shown(f"{lock.holder} ({what})") if lock.holder else "an unreadable lock file"
    return f"stale lock of {who}" if lock.stale else f"locked by {who}"


def row_inputs(node: NodeView) -> tuple[object, ...]:
    """What `node_row` reads: a live node's age moves every snapshot and is not shown, nor does
    its lock's age."""
    dim = node.health in DIMMED
    age = fmt_duration(node.age_s) if dim and node.age_s is not None else None
    return (node.name, node.health, age, node.gpu, node.memory, node.ranks, node.ranks_known,
            node.util_history, node.host, lock_note(node.lock))  # fmt: skip


def node_row(node: NodeView, colours: Palette) -> tuple[Text, ...]:
    """One table row, from this node's own facts only. A STALE node keeps its last values,
    greyed; a DOWN one shows none (they would read as live)."""
    dim = node.health in DIMMED
    style = colours.muted if dim else ""
    down = node.health is NodeHealth.DOWN
    gpu, mem, host = (None, None, None) if down else (node.gpu, node.memory, node.host)
    if down:
        ranks = "?"
    elif not node.ranks_known:
        ranks = "…"  # its container list has not come yet: "–" would say it runs nothing
    else:
        ranks = ", ".join(_rank(r) for r in node.ranks) or "–"
    ranks_cell = Text(ranks, style=style)
    if note := lock_note(None if down else node.lock):
        ranks_cell.append(f" · {note}", style=style or colours.warn)
    memory = "–"
    if mem:
        uma = " UMA" if mem.source == "meminfo" else ""  # unified memory: the OS view
        memory = f"{mem.used_mib / 1024:.0f}/{mem.total_mib / 1024:.0f}G{uma}"

    cells = (
        Text(node.name, style="bold" if not dim else colours.muted),
        _health(node, colours),
        ranks_cell,
        Text(num(gpu.utilization_pct if gpu else None, 0, "%"), style=style),
        Text(memory, style=style),
        Text(num(gpu.temperature_c if gpu else None, 0, "°C"), style=style),
        Text(num(gpu.power_w if gpu else None, 0, "W"), style=style),
        Text(num(gpu.clock_sm_mhz if gpu else None, 0, "MHz"), style=style),
        Text(
            "" if down else sparkline(node.util_history, SPARK_WIDTH, 0, 100),
            style=style or colours.accent,
        ),
        Text(num(host.cpu_pct if host else None, 0, "%"), style=style),
        Text(_net(host), style=style),
        Text(fmt_bytes(host.swap_used_bytes if host else None), style=style),
    )
    return cells


def shown_columns(rows: list[tuple[tuple[str, object], ...]], width: int, padding: int) -> int:
    """All the columns when the host's fit whole in `width` (or before the first layout), else
    all but them."""
    if not width:
        return len(COLUMNS)
    need = sum(
        max([cell_len(label), *(cell_len(cells[i][0]) for cells in rows)]) + 2 * padding
        for i, label in enumerate(COLUMNS)
    )
    return len(COLUMNS) if need <= width else len(COLUMNS) - HOST_COLUMNS


def _net(host: HostLoad | None) -> str:
    if host is None or (host.rx_bps is None and host.tx_bps is None):
        return "–"
    return f"{fmt_bytes(host.rx_bps)} {fmt_bytes(host.tx_bps)}"


class NodesPane(FittedPane):
    FIRST_FRAME = True
    FED_HIDDEN = True  # restored after a while at 128 nodes, every row was rebuilt in one frame
    READS = frozenset({Part.NODES})

    class Chosen(Message):
        """Enter on a node: show its log."""

        def __init__(self, node: str) -> None:
            super().__init__()
            self.node = node

    def __init__(self) -> None:
        super().__init__("Nodes", id="nodes")
        self._rows: dict[str, Row] = {}
        """node → the row on screen: at 128 nodes, building every row at each repaint was 39 %
        of the idle TUI's CPU (py-spy), and a repaint changes a few nodes."""
        self._columns: list[ColumnKey] = []

    def compose(self) -> ComposeResult:
        table: BoundedTable[Text] = BoundedTable(columns=len(COLUMNS), id="nodes-table")
        self._columns = table.add_columns(*COLUMNS)
        yield table

    def fill(self, snap: FleetSnapshot, width: int) -> None:
        """The rows, with the host's columns when they fit in `width` (`shown_columns`)."""
        colours = palette_of(self.app)
        before = self._rows
        rows = {node.name: _row(node, colours, before.get(node.name)) for node in snap.nodes}
        self._rows = rows
        table = self.query_one(DataTable)
        count = shown_columns([r.cells for r in rows.values()], width, table.cell_padding)
        if count < len(self._columns):
            for key in self._columns[count:]:
                table.remove_column(key)
            self._columns = self._columns[:count]
            before = {}
        elif count > len(self._columns):
            self._columns += [table.add_column(label) for label in COLUMNS[len(self._columns) :]]
            before = {}
        elif {n: r.cells for n, r in rows.items()} == {n: r.cells for n, r in before.items()}:
            return  # e.g. only the ages of live nodes moved: nothing visible changed
        if list(rows) == list(before):
            # the same nodes: only the cells that changed (one node's sample changes a few
            # cells; rebuilding the table would measure and lay out every cell again). A column
            # widens for a wider cell and keeps its width for a narrower one: a width that
            # moved with each sample (97 % → 5 %) laid the whole screen out again each time.
            for name, row in rows.items():
                cells = zip(self._columns, row.texts, before[name].cells, row.cells, strict=False)
                for column, cell, was, now in cells:
                    if was != now:
                        wider = cell.cell_len > table.columns[column].content_width
                        table.update_cell(name, column, cell, update_width=wider)
        else:
            cursor = table.cursor_row
            table.clear()
            for name, row in rows.items():
                table.add_row(*row.texts[:count], key=name)
            if table.row_count:
                table.move_cursor(row=min(cursor, table.row_count - 1), animate=False)
        down = [n.name for n in snap.nodes if n.health in DIMMED]
        self.retitle(subtitle=f"unreachable: {', '.join(down)}" if down else "")

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value is not None:
            self.post_message(self.Chosen(event.row_key.value))
