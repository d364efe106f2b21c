"""Operations pane (running and recent launch/stop/sync/switch/bench) and the Bench pane (the
depth table, the depth plot under it, and the flags at the pane's foot, where no size cuts them)."""

from __future__ import annotations

from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult

from cockpit.bench.models import depth_label
from cockpit.status.op_view import OpInFlight
from cockpit.tui.render import bar, num
from cockpit.tui.state.parts import Part
from cockpit.tui.state.views import BenchRow, FleetSnapshot, OpView, fmt_duration
from cockpit.tui.widgets.depth_plot import DepthPlot, depth_series, last_sweep, line_colours
from cockpit.tui.widgets.engine import Body
from cockpit.tui.widgets.palette import Palette, palette_of
from cockpit.tui.widgets.pane import Pane, ViewContext
from cockpit.tui.widgets.steady import SteadyStatic

FLAG_MARK = "⚑"
ALWAYS_SHOWN = (1, 2)  # the default plan's tg columns; a sweep's others join them when they fit
PLOT_MIN_ROWS = 8  # below this the plot is hidden: the table and the flags keep the room


NO_OP_HINT = "no operation yet: l launch · s stop · y sync · b bench · w switch"
READONLY_NO_OP = "no operation yet: read-only, this cockpit only watches"


def op_lines(
    ops: tuple[OpView, ...],
    now: float,
    colours: Palette,
    readonly: bool = False,
    others: tuple[OpInFlight, ...] = (),
) -> Text:
    """This cockpit's operations, then other cockpits' in flight (as their nodes record them)."""
    if not ops and not others:  # the keys it names are off in a read-only session
        return Text(READONLY_NO_OP if readonly else NO_OP_HINT, style=colours.muted)
    out = Text()
    for i, other in enumerate(others):
        if i:
            out.append("\n")
        r = other.record
        out.append("▷ ", style=colours.warn if other.stale else colours.accent)
        out.append(f"{r.what} ", style="bold")
        out.append(f"by {r.holder} {fmt_duration(max(now - r.since, 0.0))}")
        out.append(f" {r.step}" if r.step else "")
        if other.stale:
            out.append(f" · stale: not renewed for {other.age_s:.0f} s", style=colours.warn)
    for i, op in enumerate(ops):
        if i or others:
            out.append("\n")
        where = "@".join(part for part in (op.lane, op.cluster) if part)
        if op.running:
            out.append("▶ ", style=colours.accent)
            out.append(f"{op.op} {where} ", style="bold")
            out.append(f"{fmt_duration(now - op.started)} ")
            out.append(bar(op.fraction, 10), style=colours.accent)
            out.append(f" {op.current}")
            if op.message:
                out.append(f" · {op.message}", style=colours.muted)
            for notice in op.notices[-2:]:
                out.append(f"\n   ⚠ {notice}", style=colours.warn)
        else:
            mark, style = ("✔", colours.ok) if op.ok else ("✘", colours.error)
            out.append(f"{mark} ", style=style)
            out.append(f"{op.op} {where}: ", style="bold")
            out.append(op.summary, style=style if not op.ok else "")
    return out


def _tps(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f}" if value >= 100 else f"{value:.1f}"


def tg_cell(point: BenchRow) -> str:
    """A point's tg mean, with its spread only when several runs make one (never `± 0`)."""
    mean = _tps(point.tg_tps)
    if point.runs > 1 and point.tg_std is not None and point.tg_tps is not None:
        return f"{mean}±{_tps(point.tg_std)}"
    return mean


def bench_flags(points: tuple[BenchRow, ...], colours: Palette) -> Text:
    """The last sweep's flags, one line per kind with the points it marks (`⚑ noisy: 4K c2`)."""
    rows = last_sweep(points)
    by_kind: dict[str, list[str]] = {}
    for depth in sorted(rows):
        for c, p in sorted(rows[depth].items()):
            for kind in p.flags:
                by_kind.setdefault(kind, []).append(f"{depth_label(depth)} c{c}")
    lines = [f"{FLAG_MARK} {kind}: {', '.join(where)}" for kind, where in by_kind.items()]
    return Text("\n".join(lines), style=colours.warn)


def bench_title(points: tuple[BenchRow, ...]) -> str:
    """The pane's title names what the shown sweep measured when it is not a warm built-in one
    (`Bench · COLD`): the table alone would not say its figures are cold ones."""
    mode = points[-1].mode if points else ""
    return f"Bench · {mode}" if mode else "Bench"


def shown_concurrency(rows: dict[int, dict[int, BenchRow]]) -> tuple[int, ...]:
    """c1 and c2 (the default plan's, "…" until measured), then any other the sweep has."""
    return tuple(sorted({*ALWAYS_SHOWN, *(c for by_c in rows.values() for c in by_c)}))


def bench_table(
    points: tuple[BenchRow, ...],
    colours: Palette,
    readonly: bool = False,
    fit: tuple[Console, int] | None = None,
) -> RenderableType:
    """depth × concurrency tg tokens/s, Δ against the baseline when there is one, pp; a flagged
    row is marked in its last column (`bench_flags` spells the flags out). With `fit` (a console
    and the pane's width), concurrencies beyond c2 that do not fit are left out, and the caption
    names them (the report has them; `m` gives the room)."""
    if not points:
        hint = "read-only, this cockpit only watches" if readonly else "b benches the selected lane"
        return Text(f"no bench yet: {hint}", style=colours.muted)
    rows = last_sweep(points)
    wanted = shown_concurrency(rows)
    shown = wanted
    table = _depth_table(points, rows, shown, colours)
    while fit is not None and len(shown) > len(ALWAYS_SHOWN) and _width(fit[0], table) > fit[1]:
        shown = shown[:-1]
        table = _depth_table(points, rows, shown, colours)
    left = wanted[len(shown) :]
    if left:
        names = ", ".join(f"c{c}" for c in left)
        table.caption = f"{names}: no room (m, or the report)"
        table.caption_style = colours.muted
    return table


def _width(console: Console, table: Table) -> int:
    return Measurement.get(console, console.options, table).maximum


def _depth_table(
    points: tuple[BenchRow, ...],
    rows: dict[int, dict[int, BenchRow]],
    concurrency: tuple[int, ...],
    colours: Palette,
) -> Table:
    with_base = any(p.baseline_tg_tps for by_c in rows.values() for p in by_c.values())
    table = Table(  # one space between columns, none at the edges: it fits the right column
        box=None,
        padding=(0, 1),
        collapse_padding=True,
        pad_edge=False,
        title=points[-1].lane,
        title_style=colours.muted,
    )
    table.add_column("depth", justify="right", no_wrap=True)
    legend = line_colours(colours)  # the headers of c1 and c2 are the depth plot's legend
    for c in concurrency:
        name = f"tg c{c}"
        table.add_column(name, justify="right", no_wrap=True, header_style=legend.get(name, ""))
        if with_base:
            table.add_column("Δ", justify="right", no_wrap=True)
    table.add_column("pp c1", justify="right", no_wrap=True, header_style=legend["pp c1"])
    table.add_column("", no_wrap=True)  # FLAG_MARK on a flagged row
    for depth in sorted(rows):
        label = depth_label(depth)
        cells: list[Text | str] = [label]
        flagged = False
        for c in concurrency:
            p = rows[depth].get(c)
            cells.append(tg_cell(p) if p else "…")
            if with_base:
                if p and p.tg_tps is not None and p.baseline_tg_tps:
                    delta = (p.tg_tps - p.baseline_tg_tps) / p.baseline_tg_tps
                    style = colours.ok if delta >= -0.05 else colours.error
                    cells.append(Text(f"{delta:+.0%}", style=style))
                else:
                    cells.append("")
            flagged = flagged or bool(p and p.flags)
        c1 = rows[depth].get(1)
        cells.append(num(c1.pp_tps, 0) if c1 else "…")
        cells.append(Text(FLAG_MARK, style=colours.warn) if flagged else "")
        table.add_row(*cells)
    return table


class OpsPane(Pane):
    READS = frozenset({Part.OPS})

    def __init__(self) -> None:
        super().__init__("Operations", id="ops")
        self._shown: tuple[object, ...] = ()

    def compose(self) -> ComposeResult:
        yield Body(id="ops-body")

    def show(self, snap: FleetSnapshot, ctx: ViewContext) -> None:
        running = sum(1 for op in snap.ops if op.running)
        others = snap.others()
        ticks = int(snap.at) if running or others else 0  # elapsed ticks by second
        key = (snap.ops, others, self.app.theme, ticks)
        if key == self._shown:
            return
        self._shown = key
        ops = op_lines(snap.ops, snap.at, palette_of(self.app), self.readonly, others)
        self.query_one(Body).update(ops)
        self.retitle(subtitle=f"{running} running · x cancels" if running else "")


class BenchPane(Pane):
    """The table on top, the flags docked at the foot (visible at every size), the plot in what
    room is left, hidden when that is too little to read."""

    READS = frozenset({Part.BENCH})

    DEFAULT_CSS = """
    BenchPane #bench-flags {
        dock: bottom;
        height: auto;
    }
    BenchPane DepthPlot.-cramped {
        display: none;
    }
    """

    def __init__(self) -> None:
        super().__init__("Bench", id="bench")
        self._shown: tuple[object, ...] = ()

    def compose(self) -> ComposeResult:
        yield Body(id="bench-body")
        yield DepthPlot()
        yield SteadyStatic(id="bench-flags")

    def show(self, snap: FleetSnapshot, ctx: ViewContext) -> None:
        narrow = self.screen.has_class("-narrow")  # stacked panes: the pane grows to fit
        key = (snap.bench, self.app.theme, self.size, narrow)
        if key == self._shown:
            return
        self._shown = key
        colours = palette_of(self.app)
        width = max(self.size.width, 1)
        console = self.app.console
        table = bench_table(snap.bench, colours, self.readonly, (console, width))
        flags = bench_flags(snap.bench, colours) if snap.bench else Text()
        self.query_one(Body).update(Group(table))
        self.retitle(bench_title(snap.bench))
        self.query_one("#bench-flags", SteadyStatic).update(flags)
        used = sum(
            len(console.render_lines(r, console.options.update_width(width), pad=False))
            for r in (table, flags)
            if not isinstance(r, Text) or r.plain
        )
        room = self.size.height - used  # the content region: borders are not in it
        plot = self.query_one(DepthPlot)
        plot.set_class(not narrow and room < PLOT_MIN_ROWS, "-cramped")
        plot.draw(depth_series(snap.bench), colours)
