"""Pure text helpers for the panes: sparklines, bars, compact numbers."""

from __future__ import annotations

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


def seconds(value: float | None) -> str:
    """Latency: `850ms`, `1.52s`; `–` when unknown."""
    if value is None:
        return "–"
    return f"{value * 1000:.0f}ms" if value < 1 else f"{value:.2f}s"
