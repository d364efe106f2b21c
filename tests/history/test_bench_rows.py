"""A report's row in `history benches`: the points it measured are those with a figure (a node
lost mid-bench left points whose every request failed, and they were counted: 8 of 8)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from cockpit.bench.method import PhaseStats
from cockpit.bench.models import Flag, FlagKind
from cockpit.history.benches import bench_row
from tests.bench.test_reports import _seed_report


def test_points_without_a_figure_are_not_counted_as_measured() -> None:
    report = _seed_report()
    first, second, *rest = report.points
    failed = PhaseStats(2, None, None, None, None, None, None, None, 2, 2)  # every request failed
    unseen = PhaseStats(2, None, None, None, None, None, None, None, 2, 0, dropped=1)
    points = (
        first,
        replace(second, inference=failed, flags=(Flag(FlagKind.ERRORS, "2 of 2 failed"),)),
        *(replace(p, inference=unseen) for p in rest),
    )
    row = bench_row(replace(report, points=points, partial="engine lost"), Path("r.json"))
    assert row.points == 1 and row.partial == "engine lost"
    assert (row.depth, row.tg_c1, row.tg_c2) == (first.spec.depth, first.tg, None)
    assert row.deep == first.spec.depth
