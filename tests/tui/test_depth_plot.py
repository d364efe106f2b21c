"""The Bench pane's depth plot: its series (pure) and the lazily imported plot widget."""

from __future__ import annotations

from collections.abc import Callable

from cockpit.tui.app import CockpitApp
from cockpit.tui.state.views import BenchRow
from cockpit.tui.widgets.depth_plot import (
    DepthPlot,
    DepthSeries,
    depth_series,
    line_colours,
    plot_lines,
)
from cockpit.tui.widgets.palette import Palette


def row(lane: str, depth: int, c: int, tg: float, pp: float) -> BenchRow:
    return BenchRow(lane, "dgx58-switch", depth, c, tg, pp)


def test_series_follow_the_last_lane_by_depth_with_gaps_where_unmeasured() -> None:
    points = (
        row("other", 0, 1, 10.0, 100.0),
        row("flash", 8192, 1, 61.5, 3712.0),
        row("flash", 0, 1, 67.3, 4314.0),
        row("flash", 0, 2, 72.2, 4402.0),
        row("flash", 262144, 1, 44.4, 612.0),
    )
    assert depth_series(points) == DepthSeries(
        labels=("0", "8K", "256K"),
        tg_c1=(67.3, 61.5, 44.4),
        tg_c2=(72.2, None, None),
        pp_c1=(4314.0, 3712.0, 612.0),
    )
    assert depth_series(()) == DepthSeries((), (), (), ())


def test_each_measured_series_is_a_line_in_its_legend_colour_on_its_axis() -> None:
    colours = Palette(ok="#00ff00", warn="#ffaa00", error="#ff0000", accent="#00ffff", muted="#888")
    series = DepthSeries(("0", "8K", "256K"), (67.3, 61.5, 44.4), (72.2, None, None), (None,) * 3)
    lines = plot_lines(series, colours)
    assert [(line.name, line.xs, line.ys, line.side) for line in lines] == [
        ("tg c1", (0, 1, 2), (67.3, 61.5, 44.4), "left"),
        ("tg c2", (0,), (72.2,), "left"),  # pp c1 has no value yet: no line
    ]
    assert lines[0].rgb == (0, 255, 255) and line_colours(colours)["tg c1"] == colours.accent


async def test_plot_appears_with_two_depths_and_draws_every_series(
    make_app: Callable[..., CockpitApp],
) -> None:
    app = make_app()  # the recorded scene: a sweep at 0, 4K and 8K
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.2)
        await app.workers.wait_for_complete()
        await pilot.pause(0.1)
        plot = app.screen.query_one(DepthPlot)
        assert plot.display and plot.plot is not None
        assert plot.series.labels == ("0", "4K", "8K")
        drawn = plot.plot.plt.build()
        assert "4K" in drawn and "8K" in drawn  # the depth ticks
        assert "4314" in drawn  # pp on the right axis


async def test_no_plot_is_loaded_without_a_sweep(make_app: Callable[..., CockpitApp]) -> None:
    app = make_app(with_scene=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(1.5)  # past the start-up reveal
        plot = app.screen.query_one(DepthPlot)
        assert not plot.display and plot.plot is None
