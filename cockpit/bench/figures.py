"""What a report's pictures show, as data (pure): panels of named series, drawn by `draw`.

One spec feeds every renderer (matplotlib's SVG/PNG, plotext's terminal chart), so the image
beside a report and the plot `report show` prints cannot say different things. Each series
carries a stable `gid` (`series-tg-c1`, `baseline-pp-c2`, `flagged-tg-c1`): the SVG keeps it as
the element id, so a reader (or a test) finds a series by name rather than by drawing order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from cockpit.bench.likeness import differences, likeness, mode
from cockpit.bench.models import PointResult, Report, depth_label

METRICS = {"tg": "tg t/s", "pp": "pp t/s"}
"""The figures a depth curve plots; c > 1 values are batch totals, as in the tables."""

X = float | datetime


@dataclass(frozen=True)
class Series:
    """One line: its points (x, y, ± spread), which of them are flagged, and how it is drawn.

    `colour` is an index into the renderer's palette, shared by a series and its baseline so the
    dashed line reads as "the same thing, before"."""

    gid: str
    label: str
    xs: tuple[X, ...]
    ys: tuple[float, ...]
    spread: tuple[float, ...] = ()  # ± one std per point; () when not known
    flagged: tuple[int, ...] = ()  # indices into xs of points whose figure carries a flag
    dashed: bool = False
    colour: int = 0


@dataclass(frozen=True)
class Panel:
    """One chart: a y axis and its series over a shared x axis."""

    ylabel: str
    series: tuple[Series, ...]
    xlabel: str = ""
    xticks: tuple[tuple[float, str], ...] = ()  # () for a time axis (the renderer places dates)


@dataclass(frozen=True)
class FigureSpec:
    title: str
    subtitle: str
    panels: tuple[Panel, ...]


def _values(
    points: Sequence[PointResult | None], metric: str
) -> tuple[list[int], list[float], list[float], list[int]]:
    """Indices with a value, the values, their std, and the indices (into the kept values) of
    flagged points."""
    idx, ys, spread, flagged = [], [], [], []
    for i, p in enumerate(points):
        stat = getattr(p.inference, metric) if p and p.inference else None
        if stat is None:
            continue
        if p and p.flags:
            flagged.append(len(ys))
        idx.append(i)
        ys.append(stat.mean)
        spread.append(stat.std)
    return idx, ys, spread, flagged


def depth_figure(report: Report, baseline: Report | None = None) -> FigureSpec:
    """tg and pp against depth, a line per concurrency, flagged points marked, and the baseline's
    lines dashed when it measured the same thing (`likeness`: a cold or another driver's
    baseline would draw an artifact as a regression)."""
    if baseline and differences(likeness(baseline), likeness(report)):
        baseline = None
    reports = (report, baseline) if baseline else (report,)
    depths = sorted({p.spec.depth for r in reports for p in r.points})
    cs = sorted({p.spec.concurrency for p in report.points})
    ticks = tuple((float(i), depth_label(d)) for i, d in enumerate(depths))
    panels = []
    for metric, ylabel in METRICS.items():
        series = []
        for colour, c in enumerate(cs):
            for source, kind in ((report, "series"), (baseline, "baseline")):
                if source is None:
                    continue
                idx, ys, spread, flagged = _values([source.point(d, c) for d in depths], metric)
                if not ys:
                    continue
                series.append(
                    Series(
                        gid=f"{kind}-{metric}-c{c}",
                        label=f"c{c}" if kind == "series" else f"c{c} baseline",
                        xs=tuple(float(i) for i in idx),
                        ys=tuple(ys),
                        spread=tuple(spread) if kind == "series" else (),
                        flagged=tuple(flagged) if kind == "series" else (),
                        dashed=kind == "baseline",
                        colour=colour,
                    )
                )
        panels.append(Panel(ylabel, tuple(series), "context depth (tokens)", ticks))
    partial = "PARTIAL " if report.partial else ""
    against = f" · baseline {baseline.created} (dashed)" if baseline else ""
    return FigureSpec(
        title=f"{partial}{report.label}: {report.lane} on {report.cluster}",
        subtitle=f"{report.created} UTC · {report.environment.driver} · {mode(report)}{against}",
        panels=tuple(panels),
    )


def created_at(report: Report) -> datetime | None:
    """The report's creation stamp (UTC, as its file name spells it) as a time; None when it is
    not one (a report written by hand)."""
    try:
        return datetime.strptime(report.created, "%Y-%m-%d_%H%M%S")
    except ValueError:
        return None
