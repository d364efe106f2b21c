"""Fitting text and table columns to the width a pane has: a lane key keeps its cluster and the
start of its recipe, columns give up room in a stated order, and one column takes what is left
over (a lane's state, whose failure reason is the longest thing worth reading)."""

from __future__ import annotations

from collections.abc import Sequence

ELLIPSIS = "…"


def end(text: str, width: int) -> str:
    """Cut at the end (a reason, a headline: their start says what they are)."""
    return text if len(text) <= width else text[: max(width - 1, 0)] + ELLIPSIS[: max(width, 0)]


def lane_key(key: str, width: int) -> str:
    """`LANE@CLUSTER` in `width` cells: the cluster whole, the lane cut at its end (recipe names
    differ early and share their tails: `mimo26-flash-mopd-4x…@dgx58-switch`)."""
    if len(key) <= width:
        return key
    lane, at, cluster = key.rpartition("@")
    room = width - len(cluster) - len(at)
    if not at or room < 8:
        return end(key, width)
    return end(lane, room) + at + cluster


def fit_columns(
    natural: Sequence[int],
    floors: Sequence[int],
    available: int,
    shrink_order: Sequence[int],
    flex: int,
    pad: int = 0,
) -> list[int]:
    """Widths of the columns in `available` cells, each shown column costing `pad` more.

    With room to spare, column `flex` takes it all. Short of room, the columns in
    `shrink_order` give up cells one after the other, none below its floor; a column whose floor
    is 0 is dropped whole (width 0, its padding freed) rather than cut. What still does not fit
    is left to the table's horizontal scroll.
    """
    widths = list(natural)

    def spare() -> int:
        return available - sum(w + pad for w in widths if w)

    if spare() >= 0:
        widths[flex] += spare()
        return widths
    for index in shrink_order:
        if floors[index] == 0:
            widths[index] = 0
        else:
            widths[index] -= min(-spare(), max(widths[index] - floors[index], 0))
        if spare() >= 0:
            break
    if spare() > 0:  # a dropped column freed more than was missing
        widths[flex] += spare()
    return widths
