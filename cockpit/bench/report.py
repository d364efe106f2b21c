"""Reports as the seed writes them (pure): markdown tables and comparisons.

Shape: a quality line, the depth curve's picture when there is one, the perf table (every point,
mean ± std), the depth table (tg by depth with c1/c2 columns, deltas against its baseline: the
lane's previous report that measured the same thing, `likeness`), flags and warnings with their
fixes, hung points with forensics, and the environment that could skew the numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote

from cockpit.bench.likeness import differences, likeness, mode, point_void
from cockpit.bench.method import Stat, relative_delta, spread_text
from cockpit.bench.models import PointResult, Report

REGRESSION = 0.05  # a drop beyond 5 % is marked as a regression


def _stat(stat: Stat | None, digits: int = 1) -> str:
    return spread_text(stat, digits) if stat else "—"


def _num(value: float | None, digits: int = 1) -> str:
    return f"{value:,.{digits}f}" if value is not None else "—"


def _pct(delta: float | None) -> str:
    if delta is None:
        return ""
    mark = " ▼" if delta < -REGRESSION else " ▲" if delta > REGRESSION else ""
    return f"{delta:+.1%}{mark}"


def perf_rows(report: Report) -> list[list[str]]:
    rows = []
    for p in report.points:
        inf = p.inference
        status = "skipped (hung)" if p.skipped else "FLAGGED" if p.flags else ""
        rows.append(
            [
                f"pp{p.spec.pp} tg{p.spec.tg} @ d{p.spec.depth}" + (" cold" if p.spec.cold else ""),
                f"c{p.spec.concurrency}",
                _stat(inf.pp if inf else None, 0),
                _stat(inf.tg if inf else None),
                _stat(inf.tg_req if inf else None),
                _stat(inf.e2e_ttft_ms if inf else None, 0),
                _stat(p.context.pp if p.context else None, 0),
                status,
            ]
        )
    return rows


PERF_HEADER = [
    "test",
    "c",
    "pp t/s",
    "tg t/s",
    "tg t/s (req)",
    "TTFT client (ms)",
    "ctx pp t/s",
    "",
]


@dataclass(frozen=True)
class DepthRow:
    depth: int
    tg: dict[int, float | None]
    pp: dict[int, float | None]
    flagged: dict[int, bool]
    delta_tg: dict[int, float | None]


def concurrencies(report: Report) -> list[int]:
    return sorted({p.spec.concurrency for p in report.points})


def depth_rows(report: Report, baseline: Report | None = None) -> list[DepthRow]:
    rows = []
    for depth in sorted({p.spec.depth for p in report.points}):
        tg, pp, flagged, delta = {}, {}, {}, {}
        for c in concurrencies(report):
            point = report.point(depth, c)
            before = baseline.point(depth, c) if baseline else None
            tg[c] = point.tg if point else None
            pp[c] = point.pp if point else None
            flagged[c] = bool(point and point.flags)
            alike = before is not None and not point_void(before, point)
            delta[c] = relative_delta(tg[c], before.tg if before and alike else None)
        rows.append(DepthRow(depth, tg, pp, flagged, delta))
    return rows


def concurrency_verdict(rows: Sequence[DepthRow], low: int, high: int) -> str:
    """Whether c`high` ≥ c`low` at every depth, from the depths that measured both: a depth
    missing either (not measured, no rate) decides nothing, and a verdict says which it lacks."""
    pairs = {r.depth: (r.tg.get(low), r.tg.get(high)) for r in rows}
    below = [d for d, (a, b) in pairs.items() if a is not None and b is not None and b < a]
    missing = [d for d, (a, b) in pairs.items() if a is None or b is None]
    question = f"c{high} ≥ c{low} at every depth"
    if below:
        return f"{question}: **NO** (below at depth {', '.join(map(str, below))})" + (
            f"; not known at depth {', '.join(map(str, missing))} (no tg there)" if missing else ""
        )
    if missing:
        return (
            f"{question}: **not known**: no tg at c{low} or c{high} at depth "
            f"{', '.join(map(str, missing))} (not measured, or no rate)"
        )
    return f"{question}: **yes**"


def table(header: Sequence[str], rows: Sequence[Sequence[str]], right_from: int = 1) -> list[str]:
    align = ["---" if i < right_from else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def flag_lines(points: Sequence[PointResult]) -> list[str]:
    out = []
    for p in points:
        for f in p.flags:
            fix = f" **Fix:** {f.fix}" if f.fix else ""
            out.append(f"- **{p.spec.label}** [{f.kind}]: {f.message}.{fix}")
    return out


def _baseline_line(report: Report, unlike: list[str]) -> str:
    if not report.baseline:
        return "baseline none (no earlier report of this lane, recipe, mode and driver)"
    if unlike:
        return f"baseline `{report.baseline}` NOT LIKE WITH LIKE ({'; '.join(unlike)}): no deltas"
    return f"baseline `{report.baseline}`"


def render_markdown(report: Report, baseline: Report | None = None, picture: str = "") -> str:
    """The report; deltas against `baseline` only when it measured the same thing (a report of
    an older cockpit may name a cold or another driver's report as its baseline); `picture`: the
    depth curve's image file beside it, shown first (before the tables)."""
    env = report.environment
    unlike = differences(likeness(baseline), likeness(report)) if baseline else []
    if unlike:
        baseline = None
    lines = [
        ("# PARTIAL " if report.partial else "# ")
        + f"Bench `{report.label}`: `{report.lane}` on `{report.cluster}`",
        "",
        *(
            [f"**PARTIAL**: {report.partial}; only the points below were measured.", ""]
            if report.partial
            else []
        ),
        f"{report.created} UTC · driver {env.driver} · {mode(report)} · "
        + _baseline_line(report, unlike),
        "",
        f"Quality **{report.quality}**" if report.quality else "Quality: not measured",
        "",
        *([f"![tg and pp vs depth]({quote(picture)})", ""] if picture else []),
        "## Perf",
        "",
        *table(PERF_HEADER, perf_rows(report), right_from=2),
        "",
        f"## Depth (tg t/s, {mode(report)})",
        "",
    ]
    cs = concurrencies(report)
    header = ["depth", *(f"c{c}" for c in cs), *(f"pp c{c}" for c in cs)]
    if baseline:
        header += [f"Δ c{c}" for c in cs]
    by_depth = depth_rows(report, baseline)
    rows = []
    for row in by_depth:
        cells = [str(row.depth)]
        cells += [_num(row.tg[c]) + (" ⚠" if row.flagged[c] else "") for c in cs]
        cells += [_num(row.pp[c], 0) for c in cs]
        if baseline:
            cells += [_pct(row.delta_tg[c]) for c in cs]
        rows.append(cells)
    lines += table(header, rows)
    if len(cs) > 1:
        lines += ["", concurrency_verdict(by_depth, cs[0], cs[-1])]
    lines += ["", "## Flags and warnings", ""]
    flags = flag_lines(report.points)
    lines += flags or ["- none"]
    lines += [f"- {w}" for w in report.warnings]
    hung = [p for p in report.points if p.hangs]
    if hung:
        lines += ["", "## Hung points (forensics)", ""]
        for p in hung:
            for h in p.hangs:
                lines += [f"### {p.spec.label}: {h.action} after {h.after_s:.0f} s", "", "```"]
                lines += [h.forensics, "```", ""]
    lines += [
        "",
        "## Environment",
        "",
        f"- client: `{env.client_host}`, link {env.client_link}",
        f"- prefix cache: {env.prefix_cache_mode}",
        f"- prompts: {env.prompt_mode or '?'}; tokenizer `{env.tokenizer or '?'}`",
        f"- concurrency: {env.concurrency_semantics}",
        f"- engine: `{env.endpoint}`, model `{env.model}`, image `{env.engine_image or '?'}`",
        f"- recipe hash: `{env.recipe_hash or '?'}`",
        f"- latency ({env.latency_mode}): {env.latency_ms:.1f} ms"
        + (
            f"; simulator time scale ×{env.time_scale:g} (figures in engine time)"
            if env.time_scale != 1
            else ""
        ),
    ]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Comparison:
    depth: int
    concurrency: int
    tg_a: float | None
    tg_b: float | None
    pp_a: float | None
    pp_b: float | None
    void: str = ""  # why no delta may be read here (`likeness.point_void`)

    @property
    def tg_delta(self) -> float | None:
        return None if self.void else relative_delta(self.tg_b, self.tg_a)

    @property
    def pp_delta(self) -> float | None:
        return None if self.void else relative_delta(self.pp_b, self.pp_a)

    @property
    def regression(self) -> bool:
        return any(d is not None and d < -REGRESSION for d in (self.tg_delta, self.pp_delta))


def compare(a: Report, b: Report) -> list[Comparison]:
    """Every point of either report, side by side (B against A), matched by depth and
    concurrency as a report's deltas against its baseline are; a pair that did not measure the
    same thing, or misses a figure, is void (no delta, no regression)."""
    keys = sorted({(p.spec.depth, p.spec.concurrency) for p in (*a.points, *b.points)})
    out = []
    for depth, c in keys:
        pa, pb = a.point(depth, c), b.point(depth, c)
        out.append(
            Comparison(
                depth,
                c,
                tg_a=pa.tg if pa else None,
                tg_b=pb.tg if pb else None,
                pp_a=pa.pp if pa else None,
                pp_b=pb.pp if pb else None,
                void=point_void(pa, pb),
            )
        )
    return out


def render_comparison(a: Report, b: Report, name_a: str, name_b: str) -> str:
    """B against A; under a loud header when they did not measure the same thing."""
    comparisons = compare(a, b)
    unlike = differences(likeness(a), likeness(b))
    drop = "lower" if unlike else "REGRESSION"  # another lane or mode is not a regression
    rows = [
        [
            f"d{c.depth}",
            f"c{c.concurrency}",
            _num(c.tg_a),
            _num(c.tg_b),
            _pct(c.tg_delta),
            _num(c.pp_a, 0),
            _num(c.pp_b, 0),
            _pct(c.pp_delta),
            f"void: {c.void}" if c.void else drop if c.regression else "",
        ]
        for c in comparisons
    ]
    header = ["point", "c", "tg A", "tg B", "Δ tg", "pp A", "pp B", "Δ pp", ""]
    loud = f"**NOT LIKE WITH LIKE: {'; '.join(unlike)}**: no delta below is a change of one lane"
    lines = [
        f"# Compare A `{name_a}` → B `{name_b}`",
        "",
        *([loud, ""] if unlike else []),
        f"A: {a.environment.driver}, {mode(a)}, quality {a.quality or '—'}",
        f"B: {b.environment.driver}, {mode(b)}, quality {b.quality or '—'}",
        *(f"**{name} is PARTIAL**: {r.partial}" for name, r in (("A", a), ("B", b)) if r.partial),
        "",
        *table(header, rows, right_from=2),
    ]
    drops = sum(1 for c in comparisons if c.regression)
    void = sum(1 for c in comparisons if c.void)
    if unlike:
        lines += [
            "",
            f"NOT LIKE WITH LIKE ({'; '.join(unlike)}): {drops} point(s) lower by over "
            f"{REGRESSION:.0%} are not regressions",
        ]
    else:
        lines += ["", f"{drops} regression(s) beyond {REGRESSION:.0%}"]
    if void:
        lines[-1] += (
            f" over {len(comparisons) - void} point(s) that compare; {void} void (not like "
            "with like, or not measured): no delta read there"
        )
    return "\n".join(lines) + "\n"
