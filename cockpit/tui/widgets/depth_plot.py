"""The Bench pane's plot: tg c1/c2 (left axis) and pp c1 (right axis) against depth, for the lane
whose sweep the table above it shows (its headers, in the lines' colours, are the legend).

textual-plotext (with plotext under it) takes ~0.13 s to import (cold, `python -X importtime`),
so it is imported in a thread the first time a sweep has two depths to draw: never at start-up,
never on the event loop.
"""

from __future__ import annotations

import asyncio
import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.color import Color
from textual.containers import Vertical

from cockpit.bench.models import depth_label
from cockpit.tui.state.views import BenchRow
from cockpit.tui.widgets.palette import Palette

if TYPE_CHECKING:
    from textual_plotext import PlotextPlot

Series = tuple[float | None, ...]


@dataclass(frozen=True)
class DepthSeries:
    """One lane's sweep by depth: a label per depth, each series None where not measured yet."""

    labels: tuple[str, ...]
    tg_c1: Series
    tg_c2: Series
    pp_c1: Series


def last_sweep(points: tuple[BenchRow, ...]) -> dict[int, dict[int, BenchRow]]:
    """The last benched lane's points measured as its last one was (warm or COLD, the driver),
    depth → concurrency → point (what the Bench pane shows): a cold sweep's rows never stand in a
    table of warm ones."""
    by_depth: dict[int, dict[int, BenchRow]] = {}
    for p in points:
        if (p.lane, p.mode) == (points[-1].lane, points[-1].mode):
            by_depth.setdefault(p.depth, {})[p.concurrency] = p
    return by_depth


def depth_series(points: tuple[BenchRow, ...]) -> DepthSeries:
    """The last sweep as plotted series, one value per depth."""
    by_depth = last_sweep(points)
    depths = sorted(by_depth)

    def series(c: int, pick: str) -> Series:
        return tuple(getattr(by_depth[d][c], pick) if c in by_depth[d] else None for d in depths)

    return DepthSeries(
        tuple(depth_label(d) for d in depths),
        series(1, "tg_tps"),
        series(2, "tg_tps"),
        series(1, "pp_tps"),
    )


def line_colours(colours: Palette) -> dict[str, str]:
    """Each plotted line's colour; the Bench table's headers wear them as the plot's legend."""
    return {"tg c1": colours.accent, "tg c2": colours.ok, "pp c1": colours.warn}


@dataclass(frozen=True)
class PlotLine:
    """One line as plotted: the depth indices it has values at, its values, colour and axis."""

    name: str
    xs: tuple[int, ...]
    ys: tuple[float, ...]
    rgb: tuple[int, int, int]
    side: str  # plotext's yside: "left" (tg) or "right" (pp)


def plot_lines(series: DepthSeries, colours: Palette) -> list[PlotLine]:
    """The lines to draw, skipping a series with no value yet (tg c2 before its first point)."""
    legend = line_colours(colours)
    out = []
    lines = (
        ("tg c1", series.tg_c1, "left"),
        ("tg c2", series.tg_c2, "left"),
        ("pp c1", series.pp_c1, "right"),
    )
    for name, values, side in lines:
        xs = tuple(i for i, v in enumerate(values) if v is not None)
        if xs:
            ys = tuple(v for v in values if v is not None)
            out.append(PlotLine(name, xs, ys, Color.parse(legend[name]).rgb, side))
    return out


class DepthPlot(Vertical):
    """Hidden until the sweep has two depths; the plot widget is mounted on first use."""

    DEFAULT_CSS = """
    DepthPlot {
        height: 1fr;
        display: none;
    }
    DepthPlot.-drawn {
        display: block;
    }
    """

    def __init__(self) -> None:
        super().__init__(id="bench-plot")
        self._series = DepthSeries((), (), (), ())
        self._colours: Palette | None = None
        self._plot: PlotextPlot | None = None
        self._loading = False

    @property
    def series(self) -> DepthSeries:
        return self._series

    @property
    def plot(self) -> PlotextPlot | None:
        return self._plot

    def draw(self, series: DepthSeries, colours: Palette) -> None:
        self._series, self._colours = series, colours
        self.set_class(len(series.labels) >= 2, "-drawn")
        if not self.has_class("-drawn"):
            return
        if self._plot is None:
            if not self._loading:
                self._loading = True
                # a plot that cannot load stays hidden; it never takes the app down
                self.run_worker(self._load(), name="depth plot", group="plot", exit_on_error=False)
            return
        self._redraw()

    async def _load(self) -> None:
        module = await asyncio.to_thread(importlib.import_module, "textual_plotext")
        self._plot = module.PlotextPlot()
        await self.mount(self._plot)
        self._redraw()

    def _redraw(self) -> None:
        assert self._plot is not None and self._colours is not None
        plt = self._plot.plt
        plt.clear_data()
        for line in plot_lines(self._series, self._colours):
            xs, ys = list(line.xs), list(line.ys)  # no label: the table's headers are the legend
            plt.plot(xs, ys, color=line.rgb, marker="braille", yside=line.side)
        plt.xticks(list(range(len(self._series.labels))), list(self._series.labels))
        self._plot.refresh()
