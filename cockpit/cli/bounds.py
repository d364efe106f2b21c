"""The range of every numeric option: a value outside it is refused before anything runs.

click's own FloatRange lets NaN and infinity through (every comparison with NaN is false), and a
bare `type=float` takes a negative timeout: `--hang-timeout nan` marked every point hung,
`launch --boot-timeout -1` started containers and then failed. Every numeric option of every
command takes one of these types instead (tests/test_cli_refusals.py holds them to it).
"""

from __future__ import annotations

import math

import click

WEEK_S = 7 * 24 * 3600.0
"""The longest wait any option may ask for: beyond it a timeout is a typo, not a plan."""


class Bounded(click.ParamType):
    """A finite number of `kind` from `low` (excluded when `low_open`) up to `high`."""

    def __init__(
        self,
        kind: type[int] | type[float],
        low: float,
        high: float | None = None,
        *,
        low_open: bool = False,
    ) -> None:
        self.kind = kind
        self.low, self.high, self.low_open = low, high, low_open
        self.name = kind.__name__

    def _range(self) -> str:
        low = f"more than {_plain(self.low)}" if self.low_open else f"at least {_plain(self.low)}"
        return f"{low} and at most {_plain(self.high)}" if self.high is not None else low

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> int | float:
        if isinstance(value, self.kind) and not isinstance(value, bool):
            number: int | float = value
        else:
            try:
                number = self.kind(str(value).strip())
            except ValueError:
                self.fail(f"{value!r} is not a number ({self._range()})", param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number ({self._range()})", param, ctx)
        too_low = number <= self.low if self.low_open else number < self.low
        if too_low or (self.high is not None and number > self.high):
            self.fail(f"{value} is out of range: give a number {self._range()}", param, ctx)
        return number


def _plain(number: float) -> str:
    """1000000 rather than 1e+06."""
    return f"{number:.0f}" if float(number).is_integer() else f"{number:g}"


SECONDS = Bounded(float, 0.0, WEEK_S, low_open=True)
"""A wait or a timeout: more than 0 s, at most a week."""
SECONDS_OR_ZERO = Bounded(float, 0.0, WEEK_S)
"""A wait that may be skipped with 0 (the watch after ready)."""
POSITIVE = Bounded(float, 0.0, low_open=True)
"""A rate or a time scale: any finite number above 0."""
COUNT = Bounded(int, 1, 1_000_000)
"""A number of things (tokens): at least 1."""
INDEX = Bounded(int, 0, 4096)
"""A position counted from 0 (a rank)."""
