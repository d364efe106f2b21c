"""A lane's headline figures across its reports (pure): which reports share a curve, the table,
and the picture's spec.

Only like with like (`likeness`): the lane's newest report sets what the curve measures, and
every report that measured something else (a cold sweep, another driver, recipe or cluster) is
left out and counted by the reason, so a cold run never reads as a −48 % drop in the trend.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from cockpit.bench.figures import METRICS, FigureSpec, Panel, Series, created_at
from cockpit.bench.likeness import differences, likeness, mode
from cockpit.bench.models import Report, depth_label
from cockpit.errors import InputError


@dataclass(frozen=True)
class Trend:
    """The comparable reports (oldest first) with their creation times, the headline points,
    and what was left out."""

    reports: tuple[Report, ...]
    times: tuple[datetime, ...]
    depths: tuple[int, ...]
    concurrencies: tuple[int, ...]
    left_out: tuple[tuple[str, int], ...]  # (why, how many reports)

    @property
    def newest(self) -> Report:
        return self.reports[-1]


def select(
    reports: Sequence[Report],
    lane: str,
    cluster: str | None = None,
    depths: Sequence[int] = (),
) -> Trend:
    """The trend of `lane` (on `cluster`) among `reports` (in the order they were written).

    Headline points: every concurrency at `depths`, by default the shallowest and the deepest
    depth the newest report measured. Refused (InputError) when no report is the lane's or a
    depth asked for was measured by none of them."""
    own = [r for r in reports if r.lane == lane and cluster in (None, r.cluster)]
    if not own:
        where = f" on {cluster}" if cluster else ""
        lanes = sorted({f"{r.lane} on {r.cluster or '?'}" for r in reports})
        known = f" (reports there: {', '.join(lanes)})" if lanes else " (no reports there)"
        raise InputError(f"no report of lane {lane}{where}{known}")
    why = Counter[str]()
    timed = []
    for r in own:
        when = created_at(r)
        if when is None:
            why[f"creation stamp {r.created!r} is not a time"] += 1
        else:
            timed.append((r, when))
    if not timed:
        raise InputError(f"no report of lane {lane} has a creation time to plot it at")
    reference = likeness(timed[-1][0])
    kept = []
    for r, when in timed:
        unlike = differences(likeness(r), reference)
        if unlike:
            why["; ".join(unlike)] += 1
        else:
            kept.append((r, when))
    measured = sorted({p.spec.depth for r, _ in kept for p in r.points})
    if depths:
        missing = [d for d in depths if d not in measured]
        if missing:
            raise InputError(
                f"--depths: {', '.join(depth_label(d) for d in missing)} measured by no "
                f"comparable report (measured: {', '.join(depth_label(d) for d in measured)})"
            )
        chosen = tuple(sorted(set(depths)))
    else:
        newest = sorted({p.spec.depth for p in kept[-1][0].points})
        chosen = tuple(sorted({newest[0], newest[-1]})) if newest else ()
    cs = tuple(sorted({p.spec.concurrency for r, _ in kept for p in r.points}))
    return Trend(
        tuple(r for r, _ in kept), tuple(t for _, t in kept), chosen, cs, tuple(why.most_common())
    )


def _columns(trend: Trend) -> list[tuple[str, int, int]]:
    return [(m, d, c) for m in METRICS for d in trend.depths for c in trend.concurrencies]


def table(trend: Trend) -> tuple[list[str], list[list[str]]]:
    """One row per report: when, label, then tg and pp at each headline point (⚠ flagged,
    — not measured)."""
    header = ["created (UTC)", "label"]
    header += [f"{m} {depth_label(d)} c{c}" for m, d, c in _columns(trend)]
    rows = []
    for r, when in zip(trend.reports, trend.times, strict=True):
        cells = [f"{when:%Y-%m-%d %H:%M}", r.label + (" (PARTIAL)" if r.partial else "")]
        for metric, d, c in _columns(trend):
            p = r.point(d, c)
            value = getattr(p, metric) if p else None
            digits = 1 if metric == "tg" else 0
            text = f"{value:,.{digits}f}" if value is not None else "—"
            cells.append(text + (" ⚠" if p and p.flags and value is not None else ""))
        rows.append(cells)
    return header, rows


def left_out_lines(trend: Trend) -> list[str]:
    return [f"left out {n} report(s) not like the newest: {why}" for why, n in trend.left_out]


def trend_figure(trend: Trend) -> FigureSpec:
    """tg and pp at each headline point against the reports' creation time."""
    panels = []
    pairs = [(d, c) for d in trend.depths for c in trend.concurrencies]
    for metric, ylabel in METRICS.items():
        series = []
        for colour, (d, c) in enumerate(pairs):
            xs, ys, flagged = [], [], []
            for r, when in zip(trend.reports, trend.times, strict=True):
                p = r.point(d, c)
                value = getattr(p, metric) if p else None
                if value is None:
                    continue
                if p and p.flags:
                    flagged.append(len(ys))
                xs.append(when)
                ys.append(value)
            if ys:
                series.append(
                    Series(
                        gid=f"series-{metric}-d{depth_label(d)}-c{c}",
                        label=f"d{depth_label(d)} c{c}",
                        xs=tuple(xs),
                        ys=tuple(ys),
                        flagged=tuple(flagged),
                        colour=colour,
                    )
                )
        panels.append(Panel(ylabel, tuple(series), "report created (UTC)"))
    newest = trend.newest
    return FigureSpec(
        title=f"{newest.lane} on {newest.cluster}: {len(trend.reports)} report(s)",
        subtitle=f"{newest.environment.driver} · {mode(newest)} · recipe "
        f"{newest.environment.recipe_hash or '?'}",
        panels=tuple(panels),
    )
