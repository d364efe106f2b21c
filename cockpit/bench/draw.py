"""Drawing a `FigureSpec`: matplotlib for the image files, plotext for the terminal.

Both libraries are imported inside the functions: matplotlib (with numpy) takes most of a second
to import here and plotext a tenth (`benchmarks/report_pictures.py`), and neither belongs on the
path of `cockpit --help` or `cockpit lanes`. pyplot is never
imported (its global figure state and GUI backend selection are for interactive use): a
`Figure` on an Agg canvas draws the same in a bench's worker thread as anywhere else.
"""

from __future__ import annotations

import io
from datetime import datetime
from typing import TYPE_CHECKING

from cockpit.bench.figures import FigureSpec, Panel, Series

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

PALETTE = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#17becf", "#7f7f7f", "#bcbd22")
FLAG_COLOUR = "#d62728"
TERMINAL_COLOURS = ("blue", "green", "magenta", "cyan", "yellow", "white")
TERMINAL_MARKERS = ("●", "▲", "■", "◆", "+", "x")
WIDTH_IN, PANEL_IN, DPI = 9.0, 3.4, 100
SVG_PARAMS = {"svg.fonttype": "none", "svg.hashsalt": "cockpit"}
"""Text kept as text (searchable; the file is 40 % smaller than with glyph paths) and a fixed
salt for the ids matplotlib derives by hashing."""


def _layered(panel: Panel) -> list[Series]:
    """Baselines first, so the current lines are drawn over them where they coincide."""
    return sorted(panel.series, key=lambda s: not s.dashed)


def _line(ax: Axes, s: Series) -> None:
    colour = PALETTE[s.colour % len(PALETTE)]
    ax.plot(
        s.xs,
        s.ys,
        linestyle="--" if s.dashed else "-",
        marker="" if s.dashed else "o",
        markersize=4,
        linewidth=1.2 if s.dashed else 1.8,
        color=colour,
        alpha=0.7 if s.dashed else 1.0,
        label=s.label,
        gid=s.gid,
    )
    if any(s.spread):
        ax.errorbar(s.xs, s.ys, yerr=s.spread, fmt="none", ecolor=colour, capsize=3, lw=1)


def _flags(ax: Axes, s: Series, label: str) -> None:
    ax.scatter(
        [s.xs[i] for i in s.flagged],
        [s.ys[i] for i in s.flagged],
        s=140,
        facecolors="none",
        edgecolors=FLAG_COLOUR,
        linewidths=1.8,
        zorder=3,
        label=label or None,
        gid=s.gid.replace("series-", "flagged-", 1),
    )


def _panel(ax: Axes, panel: Panel) -> None:
    for s in _layered(panel):
        _line(ax, s)
    flag_label = "flagged (see the report)"
    for s in (s for s in panel.series if s.flagged):
        _flags(ax, s, flag_label)
        flag_label = ""
    ax.set_ylabel(panel.ylabel)
    ax.set_ylim(bottom=0)  # throughput from zero: a 2 % wobble must not look like a cliff
    ax.grid(alpha=0.3)
    if panel.xticks:
        ax.set_xticks([x for x, _ in panel.xticks], [label for _, label in panel.xticks])
    elif any(isinstance(x, datetime) for s in panel.series for x in s.xs):
        from matplotlib.dates import AutoDateLocator, ConciseDateFormatter

        locator = AutoDateLocator()
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(ConciseDateFormatter(locator))
    if panel.series:
        ax.legend(fontsize=8, loc="best")
    else:
        ax.text(0.5, 0.5, "no values", ha="center", va="center", transform=ax.transAxes)


def figure(spec: FigureSpec) -> Figure:
    """The spec as a matplotlib figure on an Agg canvas, panels stacked on a shared x axis."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    matplotlib.rcParams.update(SVG_PARAMS)  # the same values every time: no thread undoes them
    height = PANEL_IN * len(spec.panels) + 0.8
    fig = Figure(figsize=(WIDTH_IN, height))
    FigureCanvasAgg(fig)
    # fixed margins: matplotlib's constrained layout measured every text twice per file (40 %)
    fig.subplots_adjust(
        left=0.95 / WIDTH_IN, right=0.98, top=1 - 0.65 / height, bottom=0.55 / height, hspace=0.12
    )
    axes = fig.subplots(len(spec.panels), 1, sharex=True, squeeze=False)[:, 0]
    fig.suptitle(spec.title, fontsize=12, fontweight="bold", parse_math=False)
    axes[0].set_title(spec.subtitle, fontsize=9, loc="left", parse_math=False)
    for ax, panel in zip(axes, spec.panels, strict=True):
        _panel(ax, panel)
    axes[-1].set_xlabel(spec.panels[-1].xlabel)
    return fig


def svg(fig: Figure) -> str:
    """The figure as SVG text (`SVG_PARAMS`, no date: the same report draws the same file)."""
    out = io.StringIO()
    fig.savefig(out, format="svg", metadata={"Date": None})
    return out.getvalue()


def png(fig: Figure) -> bytes:
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=DPI)
    return out.getvalue()


def _marker(s: Series) -> str:
    return "·" if s.dashed else TERMINAL_MARKERS[s.colour % len(TERMINAL_MARKERS)]


def _colour(s: Series) -> str:
    return TERMINAL_COLOURS[s.colour % len(TERMINAL_COLOURS)]


def terminal_chart(panel: Panel, width: int = 78, height: int = 16, colour: bool = False) -> str:
    """One panel of a depth figure as text (plotext): a marker per line (the baseline's ·),
    flagged points as ✗, the legend under the chart (inside, it hid the top of the curves); ANSI
    colour only if `colour`."""
    if not panel.series:
        return f"(no {panel.ylabel} values to plot)"
    import plotext as plt

    plt.clear_figure()
    plt.plotsize(width, height)
    plt.theme("pro" if colour else "clear")
    for s in _layered(panel):
        plt.plot(list(s.xs), list(s.ys), marker=_marker(s), color=_colour(s))
    for s in panel.series:
        if s.flagged:
            flagged = [(s.xs[i], s.ys[i]) for i in s.flagged]
            plt.scatter(*zip(*flagged, strict=True), marker="✗", color="red")
    legend = [f"{_marker(s)} {s.label}" for s in panel.series]
    legend += ["✗ flagged"] if any(s.flagged for s in panel.series) else []
    if panel.xticks:
        plt.xticks([x for x, _ in panel.xticks], [label for _, label in panel.xticks])
    plt.ylim(0)
    plt.title(f"{panel.ylabel} vs {panel.xlabel or 'x'}")
    chart = str(plt.build())
    text = chart if colour else str(plt.uncolorize(chart))
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n" + "   ".join(legend)
