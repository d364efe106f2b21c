"""Readings (a lane's engine at one scrape, a node at one probe) into fixed buckets. Pure.

A bucket starts at a multiple of its span on the wall clock, so two cockpits watching the same
fleet cut the same buckets (the store keeps the first one written). Each bucket keeps the mean
of every figure over the readings that had it, and its peak; a figure no reading had is None.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

LATE_S = 2.0
"""A bucket is closed this long after its end: a reading taken just before the end may reach
the cockpit a moment after it."""


@dataclass(frozen=True)
class Reading:
    """One subject's figures at one instant (`key`: (lane, cluster) or (node,))."""

    key: tuple[str, ...]
    at: float
    values: Mapping[str, float | None]


@dataclass(frozen=True)
class Bucket:
    key: tuple[str, ...]
    at: float
    span_s: float
    n: int
    mean: Mapping[str, float | None]
    peak: Mapping[str, float | None]


def bucket_of(at: float, span_s: float) -> float:
    return math.floor(at / span_s) * span_s


def summarise(key: tuple[str, ...], at: float, span_s: float, readings: list[Reading]) -> Bucket:
    """The bucket starting at `at` from its readings."""
    names = {name: None for r in readings for name in r.values}  # first-seen order
    mean: dict[str, float | None] = {}
    peak: dict[str, float | None] = {}
    for name in names:
        seen = [v for r in readings if (v := r.values.get(name)) is not None and math.isfinite(v)]
        mean[name] = sum(seen) / len(seen) if seen else None
        peak[name] = max(seen) if seen else None
    return Bucket(key, at, span_s, len(readings), mean, peak)


def downsample(readings: Iterable[Reading], span_s: float) -> list[Bucket]:
    """Every bucket the readings fall in, by subject then time."""
    groups: dict[tuple[tuple[str, ...], float], list[Reading]] = {}
    for reading in readings:
        groups.setdefault((reading.key, bucket_of(reading.at, span_s)), []).append(reading)
    return [summarise(key, at, span_s, group) for (key, at), group in sorted(groups.items())]


@dataclass
class Downsampler:
    """Buckets fed one reading at a time; `due` hands out those that are complete. A reading
    seen already (same subject, same instant: the snapshot did not change) counts once."""

    span_s: float
    open: dict[tuple[str, ...], tuple[float, list[Reading]]] = field(default_factory=dict)
    last_at: dict[tuple[str, ...], float] = field(default_factory=dict)

    def add(self, reading: Reading) -> list[Bucket]:
        """Take a reading; returns its subject's previous bucket when this one starts a new one."""
        if self.last_at.get(reading.key, -math.inf) >= reading.at:
            return []  # the same reading again, or an older one
        self.last_at[reading.key] = reading.at
        start = bucket_of(reading.at, self.span_s)
        current = self.open.get(reading.key)
        if current is not None and current[0] == start:
            current[1].append(reading)
            return []
        self.open[reading.key] = (start, [reading])
        return [summarise(reading.key, *current[:1], self.span_s, current[1])] if current else []

    def due(self, now: float) -> list[Bucket]:
        """The buckets whose span ended (plus `LATE_S`) by `now`: a subject that stopped
        reporting (a lane stopped) has its last bucket written all the same."""
        ended = [k for k, (at, _) in self.open.items() if at + self.span_s + LATE_S <= now]
        return [self._close(key) for key in ended]

    def flush(self) -> list[Bucket]:
        """Every open bucket, complete or not (the cockpit is closing)."""
        return [self._close(key) for key in list(self.open)]

    def _close(self, key: tuple[str, ...]) -> Bucket:
        at, readings = self.open.pop(key)
        return summarise(key, at, self.span_s, readings)
