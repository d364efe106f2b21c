"""Pure text helpers for the panes: sparklines, bars, compact numbers."""

from __future__ import annotations

import math
from collections.abc import Sequence

_BLOCKS = " ▁▂▃▄▅▆▇█"


def sparkline(
    values: Sequence[float], width: int, lo: float | None = None, hi: float | None = None
) -> str:
    """The last `width` values as block characters, scaled to [lo, hi] (default: their range)."""
    if width <= 0:
        return ""
    tail = list(values)[-width:]
    if not tail:
        return " " * width
    low = min(tail) if lo is None else lo
    high = max(tail) if hi is None else hi
    span = high - low
    top = len(_BLOCKS) - 1
    chars = []
    for v in tail:
        level = top if span <= 0 and v > low else 0 if span <= 0 else round((v - low) / span * top)
        chars.append(_BLOCKS[max(0, min(top, level))])
    return "".join(chars).rjust(width)


def bar(fraction: float | None, width: int) -> str:
    """A filled bar `█████░░░░░` for a 0..1 fraction; blank-ish when unknown."""
    if width <= 0:
        return ""
    if fraction is None:
        return "·" * width
    filled = round(max(0.0, min(1.0, fraction)) * width)
    return "█" * filled + "░" * (width - filled)


def num(value: float | None, digits: int = 1, unit: str = "") -> str:
    """`12.3`, `4.5k`, `1.2M`; `–` when unknown."""
    if value is None:
        return "–"
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale * 10:
            return f"{value / scale:.{digits}f}{suffix}{unit}"
    return f"{value:.{digits}f}{unit}"


def pct(fraction: float | None) -> str:
    return "–" if fraction is None else f"{fraction * 100:.0f}%"


def brief_seconds(value: float | None) -> str:
    """Latency in at most 5 characters, for two to a narrow cell: `0.4ms`, `175ms`, `9.3s`,
    `480s`; `–` when unknown."""
    if value is None:
        return "–"
    if value < 0.01:
        return f"{value * 1000:.1f}ms"
    if value < 1:
        return f"{value * 1000:.0f}ms"
    return f"{value:.1f}s" if value < 10 else f"{value:.0f}s"


def share_range(low: float, high: float) -> str:
    """A share known between two bounds: `97%`, or `80–90%` with the low end rounded down and
    the high end up, so the range printed still holds the true share."""
    if math.isclose(low, high, abs_tol=1e-9):
        return f"{low * 100:.0f}%"
    lo, hi = math.floor(low * 100 + 1e-9), math.ceil(high * 100 - 1e-9)
    return f"{lo}%" if lo == hi else f"{lo}–{hi}%"
