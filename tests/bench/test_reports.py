"""Reports: markdown in the seed's shape, compare with regressions, the depth plot, the files."""

from __future__ import annotations

import json
import os
import time
import tomllib
from pathlib import Path

import pytest

from cockpit.bench import artifacts
from cockpit.bench import report as rep
from cockpit.bench.method import PhaseStats, Stat
from cockpit.bench.models import (
    Environment,
    Flag,
    FlagKind,
    HangRecord,
    PointResult,
    PointSpec,
    Quality,
    Report,
    depth_label,
    from_json,
    to_json,
)
from tests.cli_runner import run_cockpit

SEED = tomllib.loads(
    (Path(__file__).resolve().parents[1] / "sim_engine" / "seed_measurements.toml").read_text()
)
BASE = SEED["flash_4x_honest_baseline"]


def _env() -> Environment:
    return Environment(
        client_host="pluto",
        client_link="wired (eth0, 1000 Mb/s)",
        prefix_cache_mode="warm prefix",
        concurrency_semantics="c>1 totals",
        driver="builtin",
        endpoint="http://127.0.0.1:30000",
        model="mimo",
        engine_image="ghcr.io/x/sparkring@sha256:c977a2d2",
        recipe_hash="abc123def456",
    )


def _report(tg: dict[tuple[int, int], float], label: str, created: str, **kw: object) -> Report:
    points = []
    for (depth, c), value in tg.items():
        stat = Stat(value, 0.5, (value,))
        pp = Stat(4000.0 - depth / 100, 10.0, (4000.0,))
        points.append(
            PointResult(
                PointSpec(depth, c, 2048, 32),
                PhaseStats(c, pp, pp, stat, stat, None, None, Stat(500, 5, (500,)), c, 0),
            )
        )
    return Report(
        label=label,
        created=created,
        lane="mimo26-flash-mopd-4x-sparkring",
        cluster="dgx58-switch",
        environment=_env(),
        points=tuple(points),
        **kw,
    )  # type: ignore[arg-type]


def _seed_report(label: str = "honest", created: str = "2026-09-29_160255") -> Report:
    tg = {}
    for depth, c1, c2 in zip(BASE["depths"], BASE["tg_c1"], BASE["tg_c2"], strict=True):
        tg[(depth, 1)], tg[(depth, 2)] = c1, c2
    return _report(tg, label, created, quality=Quality(165, 184, 90))


def test_markdown_has_the_seed_shape() -> None:
    md = rep.render_markdown(_seed_report())
    assert "Quality **165/184 (90/100)**" in md
    assert "| depth | c1 | c2 | pp c1 | pp c2 |" in md
    assert "| 131072 | 37.4 | 47.0 |" in md
    assert "c2 ≥ c1 at every depth: **yes**" in md
    assert "client: `pluto`, link wired" in md and "recipe hash: `abc123def456`" in md


def test_flags_and_hangs_are_spelled_out() -> None:
    report = _seed_report()
    flagged = PointResult(
        PointSpec(65536, 2, 2048, 32, cold=True),
        None,
        flags=(Flag(FlagKind.HUNG, "hung twice", "check the client"),),
        hangs=(HangRecord(30.0, "skipped", "ESTABLISHED 127.0.0.1:5 -> 127.0.0.1:30000"),),
    )
    report = Report(**{**report.__dict__, "points": (*report.points, flagged)})
    md = rep.render_markdown(report)
    assert "[hung]: hung twice. **Fix:** check the client" in md
    assert "skipped after 30 s" in md and "ESTABLISHED" in md


def test_compare_marks_regressions_and_deltas() -> None:
    a = _seed_report("a")
    b = _report({(0, 1): 67.3, (0, 2): 60.0, (65536, 1): 50.0}, "b", "2026-10-02_000000")
    rows = {(c.depth, c.concurrency): c for c in rep.compare(a, b)}
    assert rows[(0, 1)].tg_delta == 0 and not rows[(0, 1)].regression
    assert rows[(0, 2)].regression and rows[(0, 2)].tg_delta is not None
    assert rows[(262144, 1)].tg_b is None
    text = rep.render_comparison(a, b, "a.json", "b.json")
    assert "-16.9% ▼" in text and "REGRESSION" in text and "+7.5% ▲" in text


def test_depth_plot_has_both_series() -> None:
    lines = rep.depth_plot(_seed_report())
    assert lines[0].startswith("tg t/s vs depth")
    body = "\n".join(lines[1:])
    assert "1" in body and "2" in body and "256K" in lines[-1] and "128K" in lines[-1]


def test_files_roundtrip_and_baseline_is_the_lanes_last(tmp_path: Path) -> None:
    first = _seed_report("first", "2026-09-29_160255")
    json_path, md_path = artifacts.save_report(tmp_path, first)
    assert json_path.name == "2026-09-29_160255_first.json" and md_path.exists()
    assert artifacts.load_report(json_path) == first
    assert artifacts.baseline_for(tmp_path, first.lane, first.cluster) == json_path
    assert artifacts.baseline_for(tmp_path, first.lane, "other") is None
    second = _report(
        {(0, 1): 60.0, (0, 2): 80.0}, "second", "2026-10-02_225515", baseline=json_path.name
    )
    _, md2 = artifacts.save_report(tmp_path, second)
    assert "Δ c1" in md2.read_text() and "-10.8% ▼" in md2.read_text()
    assert not list(tmp_path.glob(".*"))  # no temporary files left behind
    assert from_json(Report, json.loads(json.dumps(to_json(second)))) == second


def test_baseline_of_two_reports_in_the_same_second_is_the_later_one(tmp_path: Path) -> None:
    """`…_run.json` sorts after `…_run-2.json` by name; the baseline must follow write order."""
    older = _seed_report("run", "2026-10-02_225515")
    artifacts.save_report(tmp_path, older)
    newer = _seed_report("run-2", "2026-10-02_225515")
    newer_path, _ = artifacts.save_report(tmp_path, newer)
    os.utime(newer_path, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    assert artifacts.baseline_for(tmp_path, newer.lane, newer.cluster) == newer_path


def test_depth_labels_are_one_spelling_for_tables_plots_and_headlines() -> None:
    assert [depth_label(d) for d in (0, 4096, 262144, 1000)] == ["0", "4K", "256K", "1000"]


def _not_a_report(tmp_path: Path, name: str, text: str | None) -> Path:
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("points", "missing field 'points'"),
        ('{"label": ', "invalid JSON at line 1 column 11: Expecting value"),
        ("[1, 2]", "a JSON array, not an object"),
        ('{"schema": "other.v3"}', "schema 'other.v3', expected 'cockpit-bench-report.v1'"),
        (None, "no such file"),
    ],
)
def test_a_file_that_is_no_report_is_one_line_and_exit_2(
    tmp_path: Path, text: str | None, reason: str
) -> None:
    """Issue 15: `report show` on a non-report JSON printed 18 lines of pydantic errors."""
    if text == "points":  # a report but for one field
        data = to_json(_seed_report())
        del data["points"]
        text = json.dumps(data)
    bad = _not_a_report(tmp_path, "bad.json", text)
    good, _ = artifacts.save_report(tmp_path, _seed_report())
    line = f"error: {bad}: not a cockpit bench report ({reason})"
    for args in (("show", bad), ("compare", good, bad), ("compare", bad, good)):
        result = run_cockpit("report", *args)
        assert (result.returncode, result.stderr.splitlines()) == (2, [line]), args
        assert result.stdout == ""
