"""The Bench pane's table and flags (pure): the spread only where runs make one, the flags by kind."""

from __future__ import annotations

import io

from rich.console import Console

from cockpit.tui.state.views import BenchRow
from cockpit.tui.widgets.activity import bench_flags, bench_table, tg_cell
from cockpit.tui.widgets.palette import Palette

COLOURS = Palette("green", "yellow", "red", "cyan", "grey50")


def point(depth: int, c: int, runs: int, flags: tuple[str, ...] = ()) -> BenchRow:
    return BenchRow("flash", "dgx58-switch", depth, c, 61.04, 3990.0, None, flags, 1.23, runs)


def text(renderable: object) -> str:
    console = Console(width=60, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def test_one_run_shows_no_spread_several_do() -> None:
    assert tg_cell(point(0, 1, runs=1)) == "61.0"  # never "± 0"
    assert tg_cell(point(0, 1, runs=3)) == "61.0±1.2"
    assert "±" not in text(bench_table((point(0, 1, 1), point(0, 2, 1)), COLOURS))
    assert "61.0±1.2" in text(bench_table((point(0, 1, 3),), COLOURS))


def test_flags_are_grouped_by_kind_with_the_points_they_mark() -> None:
    points = (
        point(4096, 2, 1, ("prefill-in-decode",)),
        point(65536, 1, 1, ("depth-dip", "noisy")),
        point(65536, 2, 1, ("prefill-in-decode",)),
    )
    assert bench_flags(points, COLOURS).plain.splitlines() == [
        "⚑ prefill-in-decode: 4K c2, 64K c2",
        "⚑ depth-dip: 64K c1",
        "⚑ noisy: 64K c1",
    ]
