"""`report compare` point by point: a pp64 report against a pp2048 one, and a PARTIAL report
against a whole one, said "0 regression(s)", exit 0 (issue 31)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from cockpit.bench import report as rep
from cockpit.bench.artifacts import save_report
from cockpit.bench.models import Report
from tests.bench.test_reports import _seed_report
from tests.cli_runner import run_cockpit


def _shaped(report: Report, pp: int, label: str, created: str) -> Report:
    points = tuple(replace(p, spec=replace(p.spec, pp=pp)) for p in report.points)
    return replace(report, label=label, created=created, points=points)


def test_reports_of_another_prompt_size_are_refused_in_one_line(tmp_path: Path) -> None:
    big = _seed_report()
    small = _shaped(_seed_report(), 64, "pp64", "2026-10-01_0")
    a, _ = save_report(tmp_path, big)
    b, _ = save_report(tmp_path, small)
    refused = run_cockpit("report", "compare", a, b)
    assert refused.returncode == 2 and refused.stdout == ""
    [line] = refused.stderr.splitlines()
    assert line == (
        "error: not comparable: no point compares (pp2048/tg32 vs pp64/tg32) "
        "(--force compares them anyway, marked so)"
    )
    forced = run_cockpit("report", "compare", a, b, "--force")
    assert forced.returncode == 0, forced.stderr
    assert forced.stdout.count("void: pp2048/tg32 vs pp64/tg32") == len(big.points)
    assert "▼" not in forced.stdout and "REGRESSION" not in forced.stdout


def test_a_partial_reports_missing_points_are_void_not_unchanged() -> None:
    whole = _seed_report()
    lost = whole.points[2:]
    measured = tuple(replace(p, inference=None) if p in lost else p for p in whole.points)
    partial = replace(
        whole, label="lost", created="2026-10-01_0", points=measured, partial="engine lost"
    )
    rows = rep.compare(whole, partial)
    assert [r.void for r in rows[2:]] == ["not measured in B"] * len(lost)
    assert not any(r.void for r in rows[:2])
    text = rep.render_comparison(whole, partial, "a.json", "b.json")
    assert "**B is PARTIAL**: engine lost" in text
    assert (
        f"0 regression(s) beyond 5% over 2 point(s) that compare; {len(lost)} void (not like "
        "with like, or not measured): no delta read there"
    ) in text
