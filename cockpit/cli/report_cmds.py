"""`report show|compare|trend`: reading bench reports, one, two, or a lane's over time.

Files only: no inventory, no SSH, so `report` loads none of the bench's network code.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import click

from cockpit.atomic import write_atomic
from cockpit.bench import artifacts, draw
from cockpit.bench import report as rep
from cockpit.bench import trend as tr
from cockpit.bench.figures import depth_figure
from cockpit.bench.likeness import differences, likeness
from cockpit.bench.models import Report
from cockpit.bench.sweep_plan import numbers
from cockpit.cli.guided import GuidedGroup
from cockpit.errors import InputError

IMAGE_SUFFIXES = (".svg", ".png")


def depth_charts(report: Report, baseline: Report | None, metrics: int = 2) -> list[str]:
    """The report's depth curve as text for this terminal (tg, then pp), coloured only on a
    terminal that shows colour."""
    width = max(40, min(shutil.get_terminal_size().columns, 100) - 2)
    colour = sys.stdout.isatty()
    panels = depth_figure(report, baseline).panels[:metrics]
    return [draw.terminal_chart(panel, width=width, colour=colour) for panel in panels]


@click.group(name="report", cls=GuidedGroup)
def report_group() -> None:
    """Read bench reports: show one, compare two, trend a lane's."""


@report_group.command(name="show")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--plot/--no-plot", default=True, help="Terminal depth plot of tg and pp.")
def report_show(file: Path, plot: bool) -> None:
    """A report as markdown (deltas against its baseline), and its depth plot."""
    report = artifacts.load_report(file)
    baseline = artifacts.baseline_of(report, file.parent)
    click.echo(rep.render_markdown(report, baseline))
    if plot:
        for chart in depth_charts(report, baseline):
            click.echo(chart + "\n")


@report_group.command(name="compare")
@click.argument("a", type=click.Path(path_type=Path))
@click.argument("b", type=click.Path(path_type=Path))
@click.option(
    "--force", is_flag=True, help="Compare reports that measured different things (loudly)."
)
def report_compare(a: Path, b: Path, force: bool) -> None:
    """B against A, point by point: deltas in %, regressions marked.

    Only like with like: reports of another lane, recipe, model, warm/cold mode or driver are
    refused unless --force, which prints them under a NOT LIKE WITH LIKE header; so are two
    reports none of whose points compare (another prompt or response size, or not measured).
    A point that does not compare is shown void, with no delta."""
    first, second = artifacts.load_report(a), artifacts.load_report(b)
    unlike = differences(likeness(first), likeness(second))
    if not unlike:
        voids = [c.void for c in rep.compare(first, second)]
        if voids and all(voids):
            unlike = [f"no point compares ({'; '.join(dict.fromkeys(voids))})"]
    if unlike and not force:
        raise InputError(
            f"not comparable: {'; '.join(unlike)} (--force compares them anyway, marked so)"
        )
    click.echo(rep.render_comparison(first, second, a.name, b.name))


def _depths(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[int, ...]:
    try:
        return numbers(value, 0) if value is not None else ()
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@report_group.command(name="trend")
@click.option("--lane", required=True, help="The lane (its recipe name) as its reports name it.")
@click.option("--cluster", help="Only its reports on this cluster (default: the newest's).")
@click.option(
    "--reports",
    type=click.Path(path_type=Path),
    default=Path("reports"),
    show_default=True,
    help="The folder of the reports.",
)
@click.option(
    "--depths",
    callback=_depths,
    metavar="LIST",
    help="Headline depths, a comma list (default: the newest report's shallowest and deepest).",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The picture, .svg or .png (default: REPORTS/trend_<lane>_<cluster>.svg).",
)
def report_trend(
    lane: str, cluster: str | None, reports: Path, depths: tuple[int, ...], out: Path | None
) -> None:
    """A lane's headline figures across its reports: a table here and a picture in a file.

    Only like with like: the newest report sets what the curve measured (recipe, model, warm or
    cold, driver), and every report that measured something else is left out and counted."""
    if out is not None and out.suffix not in IMAGE_SUFFIXES:
        raise InputError(f"--out: {out.name} is not a picture file (write .svg or .png)")
    if not reports.is_dir():
        raise InputError(f"--reports: {reports} is not a folder")
    trend = tr.select(artifacts.reports_in(reports), lane, cluster, depths)
    header, rows = tr.table(trend)
    click.echo("\n".join(rep.table(header, rows, right_from=2)))
    for line in tr.left_out_lines(trend):
        click.echo(line, err=True)
    newest = trend.newest
    target = out or reports / (
        f"trend_{artifacts.safe_label(newest.lane)}_{artifacts.safe_label(newest.cluster)}.svg"
    )
    fig = draw.figure(tr.trend_figure(trend))
    write_atomic(target, draw.png(fig) if target.suffix == ".png" else draw.svg(fig))
    click.echo(f"\npicture: {target} ({len(trend.reports)} report(s))")


COMMANDS = [report_group]
