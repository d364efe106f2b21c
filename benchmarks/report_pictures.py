"""What the pictures cost each bench report: the depth curve (SVG + PNG) and the HTML page that
`save_report` writes beside the JSON and markdown.

    python benchmarks/report_pictures.py [--rounds 3] [--reports 5] [--write-results]

Each round is a fresh process (cold imports, as a `cockpit bench` run) that saves `--reports`
reports of the default plan (7 depths × c1/c2, each the baseline of the next) into an empty
folder, then draws and writes each one's pictures and page again on their own: their share of the
save. The first report of a process pays matplotlib's import; the others show the steady cost.
Also timed: the imports of matplotlib and plotext alone, and `cockpit --help` (which imports
neither).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.results_md import write_section  # noqa: E402

CHILD = r"""
import json, sys, tempfile, time
from dataclasses import replace
from pathlib import Path
from cockpit.atomic import write_atomic
from cockpit.bench import artifacts, draw
from cockpit.bench.figures import depth_figure
from cockpit.bench.html_report import render_html
from cockpit.bench.method import PhaseStats, Stat
from cockpit.bench.models import Environment, PointResult, PointSpec, Report, SweepPlan
from cockpit.bench.report import render_markdown

def report(i):
    points = []
    for spec in SweepPlan().points:
        tg = Stat(60.0 - spec.depth / 16384 + spec.concurrency * 5 + i, 0.6, (59.0, 60.0, 61.0))
        pp = Stat(4000.0 - spec.depth / 100, 20.0, (3980.0, 4000.0, 4020.0))
        inf = PhaseStats(spec.concurrency, pp, pp, tg, tg, None, None, Stat(500, 5, (500,)), 3, 0)
        points.append(PointResult(spec, inf))
    env = Environment("pluto", "wired", "warm prefix", "c>1 totals", "builtin",
                      "http://127.0.0.1:30000", "mimo", recipe_hash="abc123")
    return Report(f"run-{i}", f"2026-10-0{i + 1}_120000", "mimo", "dgx58-switch", env,
                  tuple(points), plan=SweepPlan())

folder, scratch = Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp())
saves, svgs, pngs, pages, writing, previous = [], [], [], [], [], None
for i in range(int(sys.argv[1])):
    r = replace(report(i), baseline=previous.name if previous else "")
    t = time.perf_counter()
    json_path, _ = artifacts.save_report(folder, r)
    saves.append(time.perf_counter() - t)
    # the pictures' share, again on the same report: drawn, then written
    base = artifacts.load_report(previous) if previous else None
    t = time.perf_counter()
    fig = draw.figure(depth_figure(r, base))
    svg = draw.svg(fig)
    svgs.append(time.perf_counter() - t)
    t = time.perf_counter()
    png = draw.png(fig)
    pngs.append(time.perf_counter() - t)
    t = time.perf_counter()
    page = render_html(render_markdown(r, base, "x.svg"), "t", "x.svg", svg)
    pages.append(time.perf_counter() - t)
    t = time.perf_counter()
    for name, data in (("x.svg", svg), ("x.png", png), ("x.html", page)):
        write_atomic(scratch / name, data)
    writing.append(time.perf_counter() - t)
    previous = json_path
sizes = {p.suffix: p.stat().st_size for p in folder.glob(f"{json_path.stem}.*")}
print(json.dumps({"saves": saves, "svg": svgs, "png": pngs, "page": pages, "writing": writing,
                  "sizes": sizes}))
"""

IMPORT = "import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"


def _child(*args: str) -> str:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout


def _wall(*args: str) -> float:
    t = time.perf_counter()
    _child(*args)
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reports", type=int, default=5)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    rounds = [json.loads(_child("-c", CHILD, str(args.reports))) for _ in range(args.rounds)]

    def median_ms(key: str, first: bool) -> float:
        values = [r[key][0] for r in rounds] if first else [t for r in rounds for t in r[key][1:]]
        return statistics.median(values) * 1000

    imports = {
        m: statistics.median(float(_child("-c", IMPORT.format(module=m))) for _ in range(3))
        for m in ("matplotlib.figure", "plotext")
    }
    helps = statistics.median(_wall("-m", "cockpit", "--help") for _ in range(3))
    sizes = rounds[-1]["sizes"]
    text = (
        f"`python benchmarks/report_pictures.py --rounds {args.rounds} --reports {args.reports}` "
        f"({datetime.now(UTC):%Y-%m-%d}, 1-min load average {load:.2f} at the start, "
        f"{os.cpu_count()} cores)\n\n"
        f"A report of the default plan (14 points, each the next one's baseline); medians over "
        f"{args.rounds} fresh processes, ms:\n\n"
        "| | first report of a process | every later report |\n|---|---:|---:|\n"
        f"| `save_report`, all five files | {median_ms('saves', True):.0f} "
        f"| {median_ms('saves', False):.0f} |\n"
        f"| of which the figure and its SVG | {median_ms('svg', True):.0f} (after the import) "
        f"| {median_ms('svg', False):.0f} |\n"
        f"| of which the PNG | {median_ms('png', True):.0f} | {median_ms('png', False):.0f} |\n"
        f"| of which the HTML page (markdown rendered, SVG inline) | {median_ms('page', True):.0f}"
        f" | {median_ms('page', False):.0f} |\n"
        f"| of which writing those three files (fsynced) | {median_ms('writing', True):.0f} "
        f"| {median_ms('writing', False):.0f} |\n\n"
        f"Imports alone, fresh process: matplotlib.figure {imports['matplotlib.figure'] * 1000:.0f}"
        f" ms, plotext {imports['plotext'] * 1000:.0f} ms (neither is imported by "
        f"`cockpit --help`: {helps * 1000:.0f} ms for the whole process).\n\n"
        "Files of one report (bytes): "
        + ", ".join(f"{suffix} {size:,}" for suffix, size in sorted(sizes.items()))
        + ".\n\nThe pictures cost a bench a fraction of a second once its sweep of minutes is "
        "done; the first report of a process also pays matplotlib's import. The PNG is about "
        "half of the drawing: kept, as a chat or a slide takes a PNG, not an SVG."
    )
    print(text)
    if args.write_results:
        write_section("report_pictures", f"## Bench report pictures: what they cost\n\n{text}")


if __name__ == "__main__":
    main()
