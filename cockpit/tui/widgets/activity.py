"""Operations pane (running and recent launch/stop/sync/switch/bench) and the Bench pane."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult

from cockpit.tui.render import bar, num
from cockpit.tui.state.views import BenchRow, FleetSnapshot, OpView, fmt_duration
from cockpit.tui.widgets.engine import Body
from cockpit.tui.widgets.palette import Palette, palette_of
from cockpit.tui.widgets.pane import Pane, ViewContext


def op_lines(ops: tuple[OpView, ...], now: float, colours: Palette) -> Text:
    if not ops:
        return Text(
            "no operation yet: l launch · s stop · y sync · b bench · w switch", style=colours.muted
        )
    out = Text()
    for i, op in enumerate(ops):
        if i:
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


def bench_table(points: tuple[BenchRow, ...], colours: Palette) -> Table | Text:
    """depth × c1/c2 tg tokens/s, Δ against the baseline when there is one, pp, honesty flags."""
    if not points:
        return Text("no bench yet: b benches the selected lane", style=colours.muted)
    lane = points[-1].lane
    rows: dict[int, dict[int, BenchRow]] = {}
    for p in points:
        if p.lane == lane:
            rows.setdefault(p.depth, {})[p.concurrency] = p
    with_base = any(p.baseline_tg_tps for p in points if p.lane == lane)
    table = Table(box=None, padding=(0, 1), title=lane, title_style=colours.muted)
    table.add_column("depth", justify="right", no_wrap=True)
    for c in (1, 2):
        table.add_column(f"tg c{c}", justify="right", no_wrap=True)
        if with_base:
            table.add_column("Δ", justify="right", no_wrap=True)
    table.add_column("pp c1", justify="right", no_wrap=True)
    table.add_column("flags", overflow="fold")
    for depth in sorted(rows):
        cells: list[Text | str] = [f"{depth // 1024}K" if depth else "0"]
        flags: list[str] = []
        for c in (1, 2):
            p = rows[depth].get(c)
            cells.append(_tps(p.tg_tps) if p else "…")
            if with_base:
                if p and p.tg_tps is not None and p.baseline_tg_tps:
                    delta = (p.tg_tps - p.baseline_tg_tps) / p.baseline_tg_tps
                    style = colours.ok if delta >= -0.05 else colours.error
                    cells.append(Text(f"{delta:+.0%}", style=style))
                else:
                    cells.append("")
            if p:
                flags.extend(f for f in p.flags if f not in flags)
        c1 = rows[depth].get(1)
        cells.append(num(c1.pp_tps, 0) if c1 else "…")
        cells.append(Text(" ".join(flags), style=colours.warn))
        table.add_row(*cells)
    return table


class OpsPane(Pane):
    def __init__(self) -> None:
        super().__init__("Operations", id="ops")
        self._shown: tuple[object, ...] = ()

    def compose(self) -> ComposeResult:
        yield Body(id="ops-body")

    def show(self, snap: FleetSnapshot, ctx: ViewContext) -> None:
        running = sum(1 for op in snap.ops if op.running)
        key = (snap.ops, self.app.theme, int(snap.at) if running else 0)  # elapsed ticks by second
        if key == self._shown:
            return
        self._shown = key
        self.query_one(Body).update(op_lines(snap.ops, snap.at, palette_of(self.app)))
        self.retitle(subtitle=f"{running} running · x cancels" if running else "")


class BenchPane(Pane):
    def __init__(self) -> None:
        super().__init__("Bench", id="bench")
        self._shown: tuple[object, ...] = ()

    def compose(self) -> ComposeResult:
        yield Body(id="bench-body")

    def show(self, snap: FleetSnapshot, ctx: ViewContext) -> None:
        key = (snap.bench, self.app.theme)
        if key == self._shown:
            return
        self._shown = key
        self.query_one(Body).update(Group(bench_table(snap.bench, palette_of(self.app))))
