"""Reports: markdown in the seed's shape, compare with regressions, the files (the pictures:
`test_pictures`)."""

from __future__ import annotations

import json
import os
import time
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from cockpit.bench import artifacts
from cockpit.bench import report as rep
from cockpit.bench.likeness import differences, likeness
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
    SweepPlan,
    depth_label,
    from_json,
    to_json,
)
from cockpit.config import load_inventory
from cockpit.plan import plan_lane
from cockpit.tui.fleet_ops import report_baselines
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


def test_files_roundtrip_and_baseline_is_the_lanes_last(tmp_path: Path) -> None:
    first = _seed_report("first", "2026-09-29_160255")
    json_path, md_path = artifacts.save_report(tmp_path, first)
    assert json_path.name == "2026-09-29_160255_first.json" and md_path.exists()
    assert artifacts.load_report(json_path) == first
    assert artifacts.baseline_for(tmp_path, likeness(first)) == json_path
    assert artifacts.baseline_for(tmp_path, replace(likeness(first), cluster="other")) is None
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
    assert artifacts.baseline_for(tmp_path, likeness(newer)) == newer_path


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


def _variant(report: Report, label: str, created: str, cold: bool = False, **env: str) -> Report:
    """The report as another run would make it: cold points, another model, driver, recipe."""
    points = tuple(replace(p, spec=replace(p.spec, cold=cold)) for p in report.points)
    return replace(
        report,
        label=label,
        created=created,
        points=points,
        environment=replace(report.environment, **env),
    )


def _qwen(report: Report) -> Report:
    """The report as if measured on the Qwen lane (warm or cold as it was)."""
    env = replace(report.environment, model="qwen3-0.6b", recipe_hash="0a0b")
    return replace(report, lane="qwen3-0.6b-2x", cluster="2nodes-dac", environment=env)


def test_one_function_says_what_makes_two_reports_incomparable() -> None:
    warm = _seed_report()
    assert differences(likeness(warm), likeness(_variant(warm, "again", "2026-10-01_0"))) == []
    elsewhere = _variant(warm, "pluto", "2026-10-01_0", driver="builtin on pluto")
    assert differences(likeness(warm), likeness(elsewhere)) == []  # the same client, elsewhere
    cold = _variant(warm, "cold", "2026-10-01_0", cold=True)
    assert differences(likeness(warm), likeness(cold)) == ["warm prefix vs cold"]
    benchy = _variant(warm, "b", "2026-10-01_0", driver="llama-benchy 0.4.0")
    assert differences(likeness(warm), likeness(benchy)) == ["driver builtin vs llama-benchy 0.4.0"]
    recipe = _variant(warm, "r", "2026-10-01_0", recipe_hash="ffff0000ffff")
    assert differences(likeness(warm), likeness(recipe)) == ["recipe abc123def456 vs ffff0000ffff"]
    assert differences(likeness(_qwen(cold)), likeness(warm)) == [
        "lane qwen3-0.6b-2x on 2nodes-dac vs mimo26-flash-mopd-4x-sparkring on dgx58-switch",
        "model qwen3-0.6b vs mimo",
        "cold vs warm prefix",
    ]  # the recipe differs with the lane: not said twice


def test_a_cold_bench_never_takes_a_warm_report_as_its_baseline(tmp_path: Path) -> None:
    """Issue 15: a `--cold` bench took the last warm report as its baseline and showed the seed's
    warm-vs-cold artifact as −48 % regressions."""
    warm = _seed_report("warm", "2026-10-01_100000")
    cold = _variant(_seed_report(), "cold", "2026-10-01_090000", cold=True)
    cold_path, _ = artifacts.save_report(tmp_path, cold)
    artifacts.save_report(tmp_path, warm)  # the newest report of the lane is a warm one
    again = _variant(_seed_report(), "cold-2", "2026-10-02_090000", cold=True)
    assert artifacts.baseline_for(tmp_path, likeness(again)) == cold_path
    benchy = _variant(warm, "benchy", "2026-10-02_100000", driver="llama-benchy 0.4.0")
    assert artifacts.baseline_for(tmp_path, likeness(benchy)) is None
    first = rep.render_markdown(benchy)
    assert "baseline none (no earlier report of this lane, recipe, mode and driver)" in first


def test_a_recorded_baseline_that_is_not_like_gives_no_deltas() -> None:
    """A report of an older cockpit may name a warm report as the baseline of a cold one."""
    cold = replace(_variant(_seed_report(), "cold", "2026-10-02_0", cold=True), baseline="w.json")
    md = rep.render_markdown(cold, _seed_report())
    assert "baseline `w.json` NOT LIKE WITH LIKE (warm prefix vs cold): no deltas" in md
    assert "Δ c1" not in md and "▼" not in md


def _saved(tmp_path: Path, *reports: Report) -> list[Path]:
    return [artifacts.save_report(tmp_path, r)[0] for r in reports]


def test_report_compare_refuses_unlike_reports_unless_forced(tmp_path: Path) -> None:
    """Issue 15: a qwen report against a MiMo one printed "4 regression(s)", no warning."""
    mimo = _seed_report()
    qwen = _qwen(_variant(mimo, "q", "2026-10-03_0", cold=True))
    halved = _qwen(_report({k: v / 2 for k, v in _tg(mimo).items()}, "q2", "2026-10-04_0"))
    a, b, c = _saved(tmp_path, qwen, mimo, halved)
    refused = run_cockpit("report", "compare", a, b)
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.splitlines() == [
        "error: not comparable: lane qwen3-0.6b-2x on 2nodes-dac vs "
        "mimo26-flash-mopd-4x-sparkring on dgx58-switch; model qwen3-0.6b vs mimo; "
        "cold vs warm prefix (--force compares them anyway, marked so)"
    ]
    forced = run_cockpit("report", "compare", b, c, "--force")
    assert forced.returncode == 0, forced.stderr
    out = forced.stdout
    assert out.count("NOT LIKE WITH LIKE") == 2 and "regression(s)" not in out
    assert "-50.0% ▼" in out and "REGRESSION" not in out and "lower" in out


def _tg(report: Report) -> dict[tuple[int, int], float]:
    return {(p.spec.depth, p.spec.concurrency): p.tg for p in report.points if p.tg is not None}


def test_compare_and_a_reports_own_deltas_agree() -> None:
    """Both match points by depth and concurrency: `report compare` of two files said what the
    bench's own report of the second said."""
    a = _seed_report("a")
    b = _report({k: v * 0.9 for k, v in _tg(a).items()}, "b", "2026-10-02_0", baseline="a.json")
    md = rep.render_markdown(b, a)
    compared = rep.render_comparison(a, b, "a.json", "b.json")
    assert md.count("-10.0% ▼") == len(a.points)
    assert compared.count("-10.0% ▼") == len(a.points)


def test_the_tui_bench_panes_baseline_is_like_with_like(tmp_path: Path) -> None:
    """The Bench pane's deltas are against a report of what its own bench measures (the built-in
    driver's warm sweep of the lane's recipe), never a newer cold run of the CLI."""
    inventory = load_inventory()
    recipe = inventory.recipe("mimo26-flash-mopd-4x-sparkring")
    plan = plan_lane(inventory, recipe, inventory.cluster("dgx58-switch"))
    env = replace(_env(), recipe_hash=plan.recipe_hash, model=recipe.serve.served_model_name)
    warm = replace(_seed_report("tui", "2026-10-01_0"), environment=env)
    artifacts.save_report(tmp_path, warm)
    tg = {k: v / 2 for k, v in _tg(warm).items()}
    artifacts.save_report(tmp_path, _variant(warm, "cli-cold", "2026-10-02_0", cold=True))
    artifacts.save_report(
        tmp_path, replace(_report(tg, "stale", "2026-10-03_0"), environment=_env())
    )
    assert report_baselines(tmp_path, inventory) == {recipe.name: _tg(warm)}


def test_a_report_keeps_its_plan_and_the_lanes_last_plan_is_found(tmp_path: Path) -> None:
    """The TUI's plan editor starts from the lane's last plan: recorded in its newest report
    (whatever it measured), not in one machine's state; a report written before plans were
    recorded has none and is passed over."""
    assert artifacts.last_plan(tmp_path / "none", "a", "b") is None
    old = to_json(_seed_report("old", "2026-09-29_160255"))
    del old["plan"]
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert artifacts.load_report(tmp_path / "old.json").plan is None
    cold = SweepPlan((0, 65536), (1,), 512, 64, runs=5, cold=True, driver="llama-benchy")
    report = replace(_seed_report("cold", "2026-10-01_0"), plan=cold)
    path, _ = artifacts.save_report(tmp_path, report)
    assert artifacts.load_report(path).plan == cold
    newest_elsewhere = replace(_qwen(_seed_report("q", "2026-10-03_0")), plan=SweepPlan())
    artifacts.save_report(tmp_path, newest_elsewhere)
    assert artifacts.last_plan(tmp_path, report.lane, report.cluster) == cold
    assert artifacts.last_plan(tmp_path, report.lane, "other") is None
