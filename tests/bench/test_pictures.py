"""The pictures beside a report, looked at: the depth curve (spec, SVG, PNG), the HTML page,
the terminal chart, and `report trend`."""

from __future__ import annotations

import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest
from PIL import Image

from cockpit.bench import artifacts, draw
from cockpit.bench import trend as tr
from cockpit.bench.figures import depth_figure
from cockpit.bench.models import Flag, FlagKind, Report
from cockpit.errors import InputError
from tests.bench.test_reports import _qwen, _report, _seed_report, _tg, _variant
from tests.cli_runner import run_cockpit

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = "<script>alert(1)</script>"
LANE = _seed_report().lane


def _flagged(report: Report, depth: int) -> Report:
    """The report with its points at `depth` flagged noisy (a message with markup in it)."""
    flag = Flag(FlagKind.NOISY, "runs disagree <img src=x onerror=alert(1)>", "re-run it")
    points = tuple(replace(p, flags=(flag,)) if p.spec.depth == depth else p for p in report.points)
    return replace(report, points=points)


def _scaled(report: Report, label: str, created: str, factor: float, **kw: object) -> Report:
    tg = {k: v * factor for k, v in _tg(report).items()}
    return _report(tg, label, created, **kw)


def _groups(svg: Path) -> dict[str, ET.Element]:
    root = ET.parse(svg).getroot()
    return {g.get("id", ""): g for g in root.iter(f"{SVG}g")}


def _style(group: ET.Element) -> str:
    return next(group.iter(f"{SVG}path")).get("style", "")


def _series(svg: Path, kind: str = "series-") -> list[str]:
    return sorted(gid for gid in _groups(svg) if gid.startswith(kind))


def test_the_depth_figure_has_a_line_per_concurrency_and_metric() -> None:
    first = _seed_report()
    spec = depth_figure(_flagged(first, 131072))
    assert [p.ylabel for p in spec.panels] == ["tg t/s", "pp t/s"]
    tg = spec.panels[0]
    assert [s.gid for s in tg.series] == ["series-tg-c1", "series-tg-c2"]
    assert [label for _, label in tg.xticks] == ["0", "4K", "8K", "16K", "64K", "128K", "256K"]
    assert tg.series[0].ys[5] == 37.4 and tg.series[0].flagged == (5,)  # the seed's 128K dip
    assert "baseline" not in spec.subtitle


def test_the_baseline_is_dashed_only_when_it_measured_the_same_thing() -> None:
    first = _seed_report("first", "2026-09-29_160255")
    second = _scaled(first, "second", "2026-10-02_225515", 0.9, baseline="first.json")
    spec = depth_figure(second, first)
    gids = [(s.gid, s.dashed) for s in spec.panels[0].series]
    assert gids == [
        ("series-tg-c1", False),
        ("baseline-tg-c1", True),
        ("series-tg-c2", False),
        ("baseline-tg-c2", True),
    ]
    assert "baseline 2026-09-29_160255 (dashed)" in spec.subtitle
    cold = _variant(first, "cold", "2026-09-28_0", cold=True)
    assert all(not s.dashed for p in depth_figure(second, cold).panels for s in p.series)


def test_a_saved_report_has_its_picture_and_page_beside_it(tmp_path: Path) -> None:
    first = _seed_report("first", "2026-09-29_160255")
    first_json, _ = artifacts.save_report(tmp_path, first)
    second = _flagged(
        _scaled(first, "second", "2026-10-02_225515", 0.9, baseline=first_json.name), 131072
    )
    json_path, md_path = artifacts.save_report(tmp_path, second)
    svg, png, page = (json_path.with_suffix(s) for s in (".svg", ".png", ".html"))

    root = ET.parse(svg).getroot()
    width, height = (float(root.get(k, "0").removesuffix("pt")) for k in ("width", "height"))
    assert width > 300 and height > 300
    assert _series(svg) == ["series-pp-c1", "series-pp-c2", "series-tg-c1", "series-tg-c2"]
    assert _series(svg, "baseline-") == [
        "baseline-pp-c1", "baseline-pp-c2", "baseline-tg-c1", "baseline-tg-c2"
    ]  # fmt: skip
    groups = _groups(svg)
    assert "stroke-dasharray" in _style(groups["baseline-tg-c1"])
    assert "stroke-dasharray" not in _style(groups["series-tg-c1"])
    assert {"flagged-tg-c1", "flagged-tg-c2"} <= set(groups)
    assert _series(tmp_path / first_json.with_suffix(".svg").name, "baseline-") == []
    again = depth_figure(artifacts.load_report(json_path), artifacts.load_report(first_json))
    assert draw.svg(draw.figure(again)) == svg.read_text()  # the same report, the same file

    with Image.open(png) as image:
        assert image.size == (900, 760)
        grey = image.convert("L")
        dark = sum(grey.histogram()[:128])
        assert grey.getextrema()[0] < 64 and dark > 0.01 * image.size[0] * image.size[1]

    assert f"![tg and pp vs depth]({svg.name})" in md_path.read_text()
    text = page.read_text()
    assert text.count("<svg") == 1 and 'id="series-tg-c1"' in text
    assert "<img" not in text and "<script" not in text and "<link" not in text
    assert ' src="' not in text and ' href="http' not in text and "url(http" not in text
    assert "| 131072 |" not in text and "<td>131072</td>" in text  # the tables, rendered
    assert "[noisy]: runs disagree &lt;img src=x onerror=alert(1)&gt;" in text
    assert "recipe hash: <code>abc123def456</code>" in text


def test_a_cancelled_sweeps_record_is_written_at_once_and_its_pictures_in_a_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cancelled bench must not wait (in the TUI the save ran on the event loop for 0.3 to
    0.7 s, matplotlib drawing): the JSON and markdown now, the pictures in a thread."""
    go, draw_pictures = threading.Event(), artifacts._draw

    def held(*args: object) -> None:
        go.wait(60)
        draw_pictures(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(artifacts, "_draw", held)
    report = replace(_seed_report("cancelled", "2026-10-02_000000"), partial="sweep cancelled")
    json_path, md_path = artifacts.save_report(tmp_path, report, draw_now=False)
    assert json_path.is_file() and md_path.is_file()  # while the drawing has not begun
    [drawing] = [t for t in threading.enumerate() if t.name == "bench-pictures"]
    assert not drawing.daemon  # a CLI process ends once the pictures are written
    go.set()
    drawing.join(timeout=60)
    for suffix in (".svg", ".png", ".html"):
        assert json_path.with_suffix(suffix).stat().st_size > 0


def test_operator_text_in_the_page_and_picture_is_escaped(tmp_path: Path) -> None:
    """Lane names and labels are the operators' text: shown, never run."""
    hostile = replace(_seed_report("<script>", "2026-10-01_000000"), lane=HOSTILE, cluster="<b>")
    json_path, _ = artifacts.save_report(tmp_path, hostile)
    page = json_path.with_suffix(".html").read_text()
    assert "<script" not in page and "<b>" not in page
    assert f"<title>Bench &lt;script&gt;: {HOSTILE.replace('<', '&lt;').replace('>', '&gt;')}" in (
        page
    )
    assert page.count("<svg") == 1  # the picture's file name, quoted, still found
    svg = ET.parse(json_path.with_suffix(".svg")).getroot()  # well-formed despite the title
    texts = "".join(t.text or "" for t in svg.iter(f"{SVG}text"))
    assert f"<script>: {HOSTILE} on <b>" in texts


def test_report_show_prints_the_depth_curve_with_plotext(tmp_path: Path) -> None:
    json_path, _ = artifacts.save_report(tmp_path, _flagged(_seed_report(), 131072))
    shown = run_cockpit("report", "show", json_path)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "tg t/s vs context depth" in out and "pp t/s vs context depth" in out
    assert "● c1   ▲ c2   ✗ flagged" in out and "256K" in out and "\x1b[" not in out
    assert "![tg and pp vs depth]" not in out  # the terminal gets the chart, not the link
    quiet = run_cockpit("report", "show", json_path, "--no-plot")
    assert "vs context depth" not in quiet.stdout


def test_drawing_libraries_load_only_when_drawing() -> None:
    """`cockpit --help` and `lanes` stay fast: matplotlib (half a second), plotext and
    markdown-it load when a picture, a chart or a page is drawn."""
    code = (
        "import sys, cockpit.cli.main, cockpit.cli.report_cmds, cockpit.bench.artifacts;"
        "print(sorted(m for m in ('matplotlib', 'plotext', 'markdown_it') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lane benched four times over a week (one of them cold, one by llama-benchy), and
    another lane, saved as the bench saves them."""
    folder = tmp_path_factory.mktemp("history")
    first = _seed_report("monday", "2026-09-28_090000")
    reports = [
        first,
        _variant(_scaled(first, "cold", "2026-09-29_090000", 0.5), "cold", "2026-09-29_090000", cold=True),
        _scaled(first, "tuesday", "2026-09-30_090000", 1.1),
        _variant(first, "benchy", "2026-10-01_090000", driver="llama-benchy 0.4.0"),
        _qwen(_seed_report("qwen", "2026-10-02_090000")),
        _flagged(_scaled(first, "friday", "2026-10-03_090000", 0.95), 262144),
    ]  # fmt: skip
    for report in reports:
        artifacts.save_report(folder, report)
    return folder


def test_trend_keeps_like_with_like_and_counts_the_rest() -> None:
    first = _seed_report("monday", "2026-09-28_090000")
    reports = [
        first,
        _variant(first, "cold", "2026-09-29_090000", cold=True),
        _scaled(first, "tuesday", "2026-09-30_090000", 1.1),
        _variant(first, "odd", "2026-09-30_1"),
    ]
    trend = tr.select(reports, first.lane)
    assert [r.label for r in trend.reports] == ["monday", "tuesday"]
    assert trend.depths == (0, 262144) and trend.concurrencies == (1, 2)
    assert tr.left_out_lines(trend) == [
        "left out 1 report(s) not like the newest: creation stamp '2026-09-30_1' is not a time",
        "left out 1 report(s) not like the newest: cold vs warm prefix",
    ]
    elsewhere = replace(_scaled(first, "moved", "2026-10-05_000000", 1.0), cluster="dgx12-switch")
    assert [r.label for r in tr.select([*reports, elsewhere], first.lane).reports] == ["moved"]
    on_58 = tr.select([*reports, elsewhere], first.lane, "dgx58-switch")
    assert [r.label for r in on_58.reports] == ["monday", "tuesday"]
    newest_cold = tr.select(reports[:2], first.lane)
    assert [r.label for r in newest_cold.reports] == ["cold"]  # the newest sets the curve
    assert tr.left_out_lines(newest_cold) == [
        "left out 1 report(s) not like the newest: warm prefix vs cold"
    ]
    header, rows = tr.table(tr.select(reports, first.lane, depths=(131072,)))
    assert header == [
        "created (UTC)",
        "label",
        "tg 128K c1",
        "tg 128K c2",
        "pp 128K c1",
        "pp 128K c2",
    ]
    assert rows[1][:4] == ["2026-09-30 09:00", "tuesday", "41.1", "51.7"]
    spec = tr.trend_figure(trend)
    assert [s.gid for s in spec.panels[0].series] == [
        "series-tg-d0-c1", "series-tg-d0-c2", "series-tg-d256K-c1", "series-tg-d256K-c2"
    ]  # fmt: skip
    with pytest.raises(InputError, match="--depths: 32K measured by no comparable report"):
        tr.select(reports, first.lane, depths=(32768,))


def test_report_trend_prints_the_table_and_draws_the_picture(history: Path, tmp_path: Path) -> None:
    out = tmp_path / "trend.svg"
    result = run_cockpit("report", "trend", "--lane", LANE, "--reports", history, "--out", out)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("| created (UTC) | label | tg 0 c1 | tg 0 c2 | tg 256K c1 |")
    assert [line.split(" | ")[1] for line in lines[2:5]] == ["monday", "tuesday", "friday"]
    assert lines[3].startswith("| 2026-09-30 09:00 | tuesday | 74.0 | 79.4 | 48.8 | 49.1 |")
    assert "| 42.2 ⚠ |" in lines[4]  # friday's flagged 256K c1
    assert lines[-1] == f"picture: {out} (3 report(s))"
    assert sorted(result.stderr.splitlines()) == [
        "left out 1 report(s) not like the newest: cold vs warm prefix",
        "left out 1 report(s) not like the newest: driver llama-benchy 0.4.0 vs builtin",
    ]  # the other lane's report is no report of this lane at all
    assert len(_series(out)) == 8  # tg and pp at 0 and 256K, c1 and c2
    assert {"flagged-tg-d256K-c1", "flagged-tg-d256K-c2"} <= set(_groups(out))
    png = tmp_path / "trend.png"
    as_png = run_cockpit("report", "trend", "--lane", LANE, "--reports", history, "--out", png)
    assert as_png.returncode == 0, as_png.stderr
    with Image.open(png) as image:
        assert image.size[0] == 900 and image.convert("L").getextrema()[0] < 64
    at_128k = run_cockpit(
        "report", "trend", "--lane", LANE, "--reports", history, "--depths", "128K"
    )
    assert at_128k.returncode == 0, at_128k.stderr
    assert "| tg 128K c1 | tg 128K c2 | pp 128K c1 | pp 128K c2 |" in at_128k.stdout
    assert (history / f"trend_{LANE}_dgx58-switch.svg").exists()  # the default picture


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--lane", "nope"], "error: no report of lane nope (reports there: mimo26-flash-mopd-4x"),
        (["--lane", "L", "--out", "x.txt"], "error: --out: x.txt is not a picture file"),
        (["--lane", "L", "--reports", "{tmp}/missing"], "error: --reports: "),
        (["--lane", "L", "--depths", "0,32K"], "error: --depths: 32K measured by no comparable"),
        (["--lane", "L", "--cluster", "nowhere"], "on nowhere (reports there: mimo26-flash-mopd"),
    ],
)
def test_report_trend_refuses_bad_input_in_one_line(
    history: Path, args: list[str], line: str
) -> None:
    args = [a.replace("{tmp}", str(history)) if a != "L" else LANE for a in args]
    result = run_cockpit("report", "trend", "--reports", history, *args)
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and line in result.stderr, result.stderr


def test_report_trend_refuses_a_depth_that_is_no_number() -> None:
    """click's own answer to a bad option value, as `bench --depths abc` gets it."""
    result = run_cockpit("report", "trend", "--lane", "L", "--depths", "abc")
    assert result.returncode == 2 and result.stdout == ""
    assert "Invalid value for '--depths': 'abc' is not a number (write 4096 or 4K)" in (
        result.stderr
    )


def test_terminal_chart_is_plain_text_unless_coloured() -> None:
    panel = depth_figure(_seed_report()).panels[0]
    plain = draw.terminal_chart(panel, width=60, height=12)
    assert "\x1b[" not in plain and plain.splitlines()[-1] == "● c1   ▲ c2"
    assert "\x1b[" in draw.terminal_chart(panel, width=60, height=12, colour=True)
    hung = replace(
        _seed_report(), points=tuple(replace(p, inference=None) for p in _seed_report().points)
    )
    assert draw.terminal_chart(depth_figure(hung).panels[1]) == "(no pp t/s values to plot)"
