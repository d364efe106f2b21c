"""KV-pool and engine-throughput panes for the selected lane while it runs, else the first
serving one; a lane with no running container has no engine view (nothing of it stays)."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult

from cockpit.telemetry.metrics import Quantiles
from cockpit.tui.fit import lane_key
from cockpit.tui.render import bar, brief_seconds, num, pct, share_range, sparkline
from cockpit.tui.state.parts import Part
from cockpit.tui.state.views import EngineView, FleetSnapshot
from cockpit.tui.widgets.palette import Palette, palette_of
from cockpit.tui.widgets.pane import Pane, ViewContext
from cockpit.tui.widgets.steady import SteadyStatic


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


_QUANTILE_HEADER = ("n", "mean", "p50", "p90", "p95", "p99")
_PHASES = (("TTFT", "ttft"), ("TPOT", "tpot"), ("ITL", "itl"), ("queue", "queue"),
           ("prefill", "prefill"), ("decode", "decode"))  # fmt: skip


def _at_most(q: Quantiles, value: float | None) -> str:
    """A quantile, or `≤300ms` when it lies in the first bucket (`Quantiles.first_bound`)."""
    bound = q.first_bound
    if value is not None and bound is not None and value <= bound:
        return f"≤{brief_seconds(bound)}"
    return brief_seconds(value)


def _pair(q: Quantiles | None) -> str:
    """`p50/p95`; one figure when both lie in the first bucket."""
    if q is None:
        return "–"
    p50, p95 = _at_most(q, q.p50), _at_most(q, q.p95)
    return p50 if p50 == p95 else f"{p50}/{p95}"


def window_note(eng: EngineView | None, full: bool) -> str:
    """The pane's subtitle: what the latency rows are and the span they cover."""
    if eng is None:
        return ""
    span = f"last {eng.window_s:.0f}s" if eng.window_s else "from the next scrape"
    return f"server-side, {span}" if full else f"p50/p95 server-side, {span}"


def _slo(eng: EngineView) -> str:
    return f"TTFT≤{brief_seconds(eng.slo.ttft_s)} TPOT≤{brief_seconds(eng.slo.tpot_s)}"


def _finish(eng: EngineView, counts: bool) -> str:
    """The window's finished requests by reason, most first: `stop 76%  length 22%`."""
    total = sum(n for _, n in eng.finished)
    if not total:
        return "–"
    return "  ".join(
        f"{reason} {n:.0f} ({n / total:.0%})" if counts else f"{reason} {n / total:.0%}"
        for reason, n in eng.finished
    )


def _rates(eng: EngineView, width: int, colours: Palette) -> Table:
    """Generation and prompt tok/s, each with its history beside it (one row each)."""
    gen = Text(f"{num(eng.gen_tps)} tok/s")
    if eng.stalled:
        gen = Text(f"{num(eng.gen_tps)} tok/s  DECODE STALL", style=f"bold reverse {colours.error}")
    prompt = Text(f"{num(eng.prompt_tps)} tok/s")
    labels = (
        "generation",
        "prompt",
        *(("spec accept",) if eng.spec_acceptance is not None else ()),
    )
    span = max(width - max(map(len, labels)) - max(gen.cell_len, prompt.cell_len) - 2, 4)
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(no_wrap=True, justify="right")
    grid.add_column(no_wrap=True)
    grid.add_row("generation", gen, Text(sparkline(eng.gen_history, span, 0.0), style=colours.ok))
    history = sparkline(eng.prompt_history, span, 0.0)
    grid.add_row("prompt", prompt, Text(history, style=colours.accent))
    if eng.spec_acceptance is not None:
        grid.add_row("spec accept", pct(eng.spec_acceptance))
    return grid


def throughput_renderable(
    eng: EngineView, width: int, colours: Palette, full: bool = False
) -> Group | Text:
    """Compact rows for the 40-column right column (the advice's titles go in the pane's title,
    what the latencies are in its subtitle: `window_note`); `full` (the pane maximised) adds
    p90/p99, counts and means, the goodput's derivation and the advice in full."""
    rows = _full_rows(eng, colours) if full else _compact_rows(eng, colours)
    return Group(headline(eng, width, colours), _rates(eng, width, colours), *rows)


def _compact_rows(eng: EngineView, colours: Palette) -> list[Table]:
    """Two latencies a row (p50/p95), then finish reasons and goodput."""
    latency = Table.grid(padding=(0, 1))
    for _ in range(2):
        latency.add_column(style="bold", no_wrap=True)
        latency.add_column(no_wrap=True)
    cells = [(label, _pair(getattr(eng, attr))) for label, attr in _PHASES]
    for (a, qa), (b, qb) in zip(cells[::2], cells[1::2], strict=True):
        latency.add_row(a, qa, b, qb)
    rows = _grid()
    rows.add_row("finish", Text(_finish(eng, counts=False), no_wrap=True, overflow="ellipsis"))
    good = "–" if eng.goodput is None else share_range(eng.goodput.low, eng.goodput.high)
    rows.add_row("goodput", Text.assemble(good, "  ", (_slo(eng), colours.muted)))
    return [latency, rows]


def _full_rows(eng: EngineView, colours: Palette) -> list[Table | Text]:
    """Every quantile with its count and mean, the finish reasons with counts, each SLO's share
    and the bucket bounds it lies between, and each piece of advice in full."""
    latency = Table.grid(padding=(0, 2))
    latency.add_column(style="bold", no_wrap=True)
    for _ in range(6):
        latency.add_column(no_wrap=True, justify="right")
    latency.add_row("", *(Text(h, style=colours.muted) for h in _QUANTILE_HEADER))
    for label, attr in (*_PHASES, ("e2e", "e2e")):
        q: Quantiles | None = getattr(eng, attr)
        if q is None:
            latency.add_row(label, *("–" * 6))
            continue
        quantiles = (_at_most(q, v) for v in (q.p50, q.p90, q.p95, q.p99))
        latency.add_row(label, f"{q.count:.0f}", brief_seconds(q.mean), *quantiles)
    rows = _grid()
    rate = f", {num(eng.finished_per_s, 2)} req/s" if eng.finished_per_s is not None else ""
    rows.add_row("finish", f"{_finish(eng, counts=True)}{rate}")
    good = eng.goodput
    slo = f"tui.toml [slo]: ttft_ms {eng.slo.ttft_s * 1000:g}, tpot_ms {eng.slo.tpot_s * 1000:g}"
    if good is None:
        rows.add_row("goodput", Text.assemble("–  ", (slo, colours.muted)))
    else:
        per_s = ""
        if eng.finished_per_s is not None:
            low, high = good.low * eng.finished_per_s, good.high * eng.finished_per_s
            per_s = f" = {num(low, 2)}" + ("" if good.exact else f"–{num(high, 2)}") + " req/s"
        met = f"{share_range(good.low, good.high)} met both{per_s}  "
        rows.add_row("goodput", Text.assemble(met, (slo, colours.muted)))
        for label, share, limit in (
            ("TTFT", good.ttft, eng.slo.ttft_s),
            ("TPOT", good.tpot, eng.slo.tpot_s),
        ):
            where = (
                "on a bucket bound: exact"
                if share.exact
                else f"between the {brief_seconds(share.below)} and "
                f"{brief_seconds(share.above)} buckets"
            )
            rows.add_row(
                f"  {label}≤{brief_seconds(limit)}",
                Text.assemble(
                    f"{share_range(share.low, share.high)} of {share.count:.0f}  ",
                    (where, colours.muted),
                ),
            )
    out: list[Table | Text] = [latency, rows]
    out += [Text(f"⚑ {h.text}", style=colours.warn) for h in eng.advice]
    return out


class Body(SteadyStatic, can_focus=True):
    """A focusable text body, so Static panes join the tab order and can be maximised."""


class _EnginePane(Pane):
    READS = frozenset({Part.ENGINES, Part.LANES})  # without an engine, the lane's state shows

    def __init__(self, title: str, *, id: str) -> None:
        super().__init__(title, id=id)
        self._key: tuple[object, ...] = ()

    def compose(self) -> ComposeResult:
        yield Body(id=f"{self.id}-body")

    def body_for(self, eng: EngineView, width: int, colours: Palette, full: bool) -> Group | Text:
        raise NotImplementedError

    def show(self, snap: FleetSnapshot, ctx: ViewContext) -> None:
        eng = engine_for(snap, ctx)
        colours = palette_of(self.app)
        missing = no_engine(snap, ctx, colours) if eng is None else None
        full = self.screen.maximized is self
        key = (eng, missing.plain if missing else None, self.size.width, self.app.theme, full)
        if key == self._key:
            return
        self._key = key
        if eng is None:
            self.query_one(Body).update(missing)
        else:
            self.query_one(Body).update(self.body_for(eng, self.size.width, colours, full))


class KvPane(_EnginePane):
    def __init__(self) -> None:
        super().__init__("KV pool", id="kv")

    def body_for(self, eng: EngineView, width: int, colours: Palette, full: bool) -> Group | Text:
        return kv_renderable(eng, width, colours)


class ThroughputPane(_EnginePane):
    TITLE = "Engine throughput"

    def __init__(self) -> None:
        super().__init__(self.TITLE, id="throughput")

    def show(self, snap: FleetSnapshot, ctx: ViewContext) -> None:
        """The advisor's hints for the lane, by title, in the pane's title, and what the latency
        rows are in its subtitle: no row of their own."""
        eng = engine_for(snap, ctx)
        advice = " · ".join(h.title for h in eng.advice) if eng else ""
        title = f"{self.TITLE} ⚑ {advice}" if advice else self.TITLE
        self.retitle(title, window_note(eng, self.screen.maximized is self))
        super().show(snap, ctx)

    def body_for(self, eng: EngineView, width: int, colours: Palette, full: bool) -> Group | Text:
        return throughput_renderable(eng, width, colours, full)
