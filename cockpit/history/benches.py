"""A bench report's index row: its place, what it measured and its headline figures. Pure."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from cockpit.bench.likeness import likeness
from cockpit.bench.models import Report
from cockpit.history.records import BenchRow


def bench_row(report: Report, path: Path) -> BenchRow:
    """tg and pp at c1 and tg at c2 of the shallowest measured depth, and tg at c1 of the
    deepest: what an operator reads first in the report's table. A point is measured when it has
    a figure: one whose every request failed, or whose decode was not observable, is not."""
    measured = [p for p in report.points if p.tg is not None or p.pp is not None]
    depths = sorted({p.spec.depth for p in measured})
    shallow, deep = (depths[0], depths[-1]) if depths else (None, None)

    def at(depth: int | None, concurrency: int) -> tuple[float | None, float | None]:
        point = report.point(depth, concurrency) if depth is not None else None
        return (point.tg, point.pp) if point is not None else (None, None)

    tg_c1, pp_c1 = at(shallow, 1)
    alike = likeness(report)
    created = datetime.strptime(report.created, "%Y-%m-%d_%H%M%S").replace(tzinfo=UTC)
    return BenchRow(
        str(path.resolve()), report.lane, report.cluster, created.timestamp(), report.label,
        alike.mode, alike.driver, report.partial, len(measured),
        sum(1 for p in measured if p.flags), shallow, tg_c1, pp_c1, at(shallow, 2)[0],
        deep, at(deep, 1)[0],
    )  # fmt: skip
