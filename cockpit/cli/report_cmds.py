"""`report show|compare`: reading bench reports, one or two.

Files only: no inventory, no SSH, so `report` loads none of the bench's network code.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import click

from cockpit.bench import artifacts, draw
from cockpit.bench import report as rep
from cockpit.bench.figures import depth_figure
from cockpit.bench.likeness import differences, likeness
from cockpit.bench.models import Report
from cockpit.cli.guided import GuidedGroup
from cockpit.errors import InputError


def depth_charts(report: Report, baseline: Report | None, metrics: int = 2) -> list[str]:
    """The report's depth curve as text for this terminal (tg, then pp), coloured only on a
    terminal that shows colour."""
    width = max(40, min(shutil.get_terminal_size().columns, 100) - 2)
    colour = sys.stdout.isatty()
    panels = depth_figure(report, baseline).panels[:metrics]
    return [draw.terminal_chart(panel, width=width, colour=colour) for panel in panels]


@click.group(name="report", cls=GuidedGroup)
def report_group() -> None:
    """Read bench reports: show one, compare two."""


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
    refused unless --force, which prints them under a NOT LIKE WITH LIKE header."""
    first, second = artifacts.load_report(a), artifacts.load_report(b)
    unlike = differences(likeness(first), likeness(second))
    if unlike and not force:
        raise InputError(
            f"not comparable: {'; '.join(unlike)} (--force compares them anyway, marked so)"
        )
    click.echo(rep.render_comparison(first, second, a.name, b.name))


COMMANDS = [report_group]
