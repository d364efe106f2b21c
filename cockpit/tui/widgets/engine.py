"""KV-pool and engine-throughput panes for the selected lane while it runs, else the first
serving one; a lane with no running container has no engine view (nothing of it stays)."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from cockpit.tui.fit import lane_key
from cockpit.tui.render import bar, num, pct, seconds, sparkline
from cockpit.tui.state.views import EngineView, FleetSnapshot
from cockpit.tui.widgets.palette import Palette, palette_of
from cockpit.tui.widgets.pane import Pane, ViewContext


def engine_for(snap: FleetSnapshot, ctx: ViewContext) -> EngineView | None:
    """The followed lane's engine, if its head has answered `/metrics`."""
    return snap.engines.get(ctx.focus) if ctx.focus else None


def no_engine(snap: FleetSnapshot, ctx: ViewContext, colours: Palette) -> Text:
    """What the pane says without an engine view: the followed lane's state, or nothing runs."""
    lane = snap.lane(ctx.focus) if ctx.focus else None
    if lane is None:
        return Text("no lane serving", style=colours.muted)
    return Text(f"{lane.key}: {lane.state_text}", style=colours.muted)


def headline(eng: EngineView, width: int, colours: Palette) -> Text:
    """The lane's key on one line, never wrapped mid-word (`fit.lane_key`)."""
    return Text(lane_key(eng.lane_key, width), style=colours.muted, no_wrap=True)


def _grid() -> Table:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(no_wrap=True)
    return grid


def kv_renderable(eng: EngineView, width: int, colours: Palette) -> Group | Text:
    usage = eng.kv_usage
    colour = (
        colours.error if (usage or 0) > 0.9 else colours.warn if (usage or 0) > 0.7 else colours.ok
    )
    grid = _grid()
    grid.add_row("usage", Text(f"{bar(usage, max(width - 16, 4))} {pct(usage)}", style=colour))
    pool = f"{num(eng.pool_tokens, 2)} tok" + (f"  {eng.pool_gib:.2f} GiB" if eng.pool_gib else "")
    grid.add_row("pool", pool)
    grid.add_row("requests", f"{num(eng.running, 0)} running  {num(eng.waiting, 0)} waiting")
    grid.add_row("prefix hit", pct(eng.prefix_hit_rate))
    grid.add_row("preempted", num(eng.preemptions_total, 0))
    spark = Text(sparkline(eng.kv_history, max(width - 12, 4), 0.0, 1.0), style=colours.accent)
    grid.add_row("history", spark)
    return Group(headline(eng, width, colours), grid)


def throughput_renderable(eng: EngineView, width: int, colours: Palette) -> Group | Text:
    grid = _grid()
    gen = Text(f"{num(eng.gen_tps)} tok/s")
    if eng.stalled:
        gen = Text(f"{num(eng.gen_tps)} tok/s  DECODE STALL", style=f"bold reverse {colours.error}")
    grid.add_row("generation", gen)
    grid.add_row("prompt", f"{num(eng.prompt_tps)} tok/s")
    grid.add_row("TTFT server", f"p50 {seconds(eng.ttft_p50)}  p95 {seconds(eng.ttft_p95)}")
    if eng.spec_acceptance is not None:
        grid.add_row("spec accept", pct(eng.spec_acceptance))
    span = max(width - 12, 4)
    grid.add_row("gen", Text(sparkline(eng.gen_history, span, 0.0), style=colours.ok))
    grid.add_row("prompt", Text(sparkline(eng.prompt_history, span, 0.0), style=colours.accent))
    return Group(headline(eng, width, colours), grid)


class Body(Static, can_focus=True):
    """A focusable text body, so Static panes join the tab order and can be maximised."""


class _EnginePane(Pane):
    def __init__(self, title: str, *, id: str) -> None:
        super().__init__(title, id=id)
        self._key: tuple[object, ...] = ()

    def compose(self) -> ComposeResult:
        yield Body(id=f"{self.id}-body")

    def body_for(self, eng: EngineView, width: int, colours: Palette) -> Group | Text:
        raise NotImplementedError

    def show(self, snap: FleetSnapshot, ctx: ViewContext) -> None:
        eng = engine_for(snap, ctx)
        colours = palette_of(self.app)
        missing = no_engine(snap, ctx, colours) if eng is None else None
        key = (eng, missing.plain if missing else None, self.size.width, self.app.theme)
        if key == self._key:
            return
        self._key = key
        if eng is None:
            self.query_one(Body).update(missing)
        else:
            self.query_one(Body).update(self.body_for(eng, self.size.width - 4, colours))


class KvPane(_EnginePane):
    def __init__(self) -> None:
        super().__init__("KV pool", id="kv")

    def body_for(self, eng: EngineView, width: int, colours: Palette) -> Group | Text:
        return kv_renderable(eng, width, colours)


class ThroughputPane(_EnginePane):
    def __init__(self) -> None:
        super().__init__("Engine throughput", id="throughput")

    def body_for(self, eng: EngineView, width: int, colours: Palette) -> Group | Text:
        return throughput_renderable(eng, width, colours)
