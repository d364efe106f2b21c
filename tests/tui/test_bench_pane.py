"""The Bench pane's table and flags (pure): the spread only where runs make one, the flags by kind."""

from __future__ import annotations

import io

from rich.console import Console

from cockpit.bench.events import PointFinished, SweepPlanned
from cockpit.bench.method import PhaseStats, Stat
from cockpit.bench.models import Flag, FlagKind, PointResult, PointSpec, SweepPlan
from cockpit.tui.state.inputs import OpEnded, OpUpdate
from cockpit.tui.state.store import Store
from cockpit.tui.state.views import BenchRow
from cockpit.tui.widgets.activity import bench_flags, bench_table, bench_title, op_lines, tg_cell
from cockpit.tui.widgets.palette import Palette
from tests.tui import scene

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


def finished(depth: int, c: int, runs: tuple[float, ...], cold: bool = False) -> PointFinished:
    """A point of the scene's lane as a bench reports it, `runs` its tg per run."""
    tg = Stat.of(runs)
    inference = PhaseStats(c, tg, tg, tg, tg, None, None, None, c * len(runs), 0)
    noisy = tg is not None and tg.std / tg.mean > 0.10
    flags = (Flag(FlagKind.NOISY, "runs disagree"),) if noisy else ()
    result = PointResult(PointSpec(depth, c, 2048, 32, cold), inference, flags=flags)
    return PointFinished(op="bench", lane=scene.LANE, cluster=scene.CLUSTER, result=result)


def planned(sweep: SweepPlan) -> SweepPlanned:
    steps = tuple(p.label for p in sweep.points)
    return SweepPlanned(op="bench", lane=scene.LANE, cluster=scene.CLUSTER, steps=steps, plan=sweep)


def test_a_sweep_of_several_runs_shows_its_spread_and_noisy_points() -> None:
    """The TUI's bench now runs 3 runs a point: the pane gets the spread and the noisy flag."""
    store = Store(scene.inventory(), scene.baselines())
    store.apply(OpUpdate(1, planned(SweepPlan(depths=(0,), concurrency=(1, 2)))))
    store.apply(OpUpdate(1, finished(0, 1, (66.0, 67.0, 68.0))))
    store.apply(OpUpdate(1, finished(0, 2, (50.0, 70.0, 90.0))))
    rows = store.snapshot(scene.T0).bench
    assert [(r.runs, r.mode, r.baseline_tg_tps) for r in rows] == [(3, "", 67.3), (3, "", 72.2)]
    table = text(bench_table(rows, COLOURS))
    assert "67.0±0.8" in table and "70.0±16.3" in table and "-3%" in table
    assert bench_flags(rows, COLOURS).plain == "⚑ noisy: 0 c2"


def test_a_cold_or_llama_benchy_sweep_is_named_and_never_read_against_the_warm_baseline() -> None:
    """The pane's baselines are warm built-in sweeps: a cold one against them is the seed's
    artifact read as −48 % (so no Δ), and its rows never mix with the warm ones in one table."""
    store = Store(scene.inventory(), scene.baselines())
    store.apply(OpUpdate(1, planned(SweepPlan(depths=(0, 4096)))))
    store.apply(OpUpdate(1, finished(4096, 1, (61.0, 62.0))))
    store.apply(OpEnded(1, "done"))
    store.apply(OpUpdate(2, planned(SweepPlan(depths=(0,), cold=True, driver="llama-benchy"))))
    store.apply(OpUpdate(2, finished(0, 1, (35.0, 36.0), cold=True)))
    snap = store.snapshot(scene.T0)
    cold = snap.bench[-1]
    assert (cold.mode, cold.baseline_tg_tps) == ("COLD · llama-benchy", None)
    assert bench_title(snap.bench) == "Bench · COLD · llama-benchy"
    table = text(bench_table(snap.bench, COLOURS))
    assert "Δ" not in table and "4K" not in table  # the warm 4K row is another table
    lane = snap.lane(f"{scene.LANE}@{scene.CLUSTER}")
    assert lane is not None and lane.bench_headline == "tg 35.5 t/s @0 c1 COLD · llama-benchy"


def test_a_read_only_cockpit_offers_no_key_it_refuses_in_its_empty_panes() -> None:
    """The Operations and Bench panes name l/s/y/b/w when empty; read-only refuses them."""
    assert "l launch" in op_lines((), 0.0, COLOURS).plain
    watching = op_lines((), 0.0, COLOURS, readonly=True).plain
    assert "read-only" in watching and "launch" not in watching
    assert "b benches" in text(bench_table((), COLOURS))
    assert "b benches" not in text(bench_table((), COLOURS, readonly=True))


def test_a_sweeps_other_concurrencies_are_columns_where_they_fit_and_named_where_not() -> None:
    sweep = tuple(point(d, c, 3) for d in (0, 4096) for c in (1, 2, 4, 8))
    wide = text(bench_table(sweep, COLOURS))
    assert all(f"tg c{c}" in wide for c in (1, 2, 4, 8)) and "no room" not in wide
    console = Console(width=200, file=io.StringIO())
    narrow = text(bench_table(sweep, COLOURS, fit=(console, 32)))
    assert "tg c1" in narrow and "tg c2" in narrow and "tg c4" not in narrow
    assert "c4, c8: no room (m, or the report)" in " ".join(narrow.split())
    some = text(bench_table(sweep, COLOURS, fit=(console, 40)))
    assert "tg c4" in some and "tg c8" not in some and "c8: no room" in some
    only_c1 = text(bench_table((point(0, 1, 3),), COLOURS, fit=(console, 32)))
    assert "tg c2" in only_c1 and "no room" not in only_c1  # c2 "…" until measured, as before
