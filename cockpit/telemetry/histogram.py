"""A Prometheus histogram as vLLM exposes it, and the arithmetic read off it: the quantile as
Prometheus' `histogram_quantile()` computes it, the mean, the lowest bound an observation can have,
and the observations made since an earlier scrape.

Its own module because more than the `/metrics` snapshot uses it: the bench builds one from its
own scan of a scrape (the decode bound of a batch) and the SLO check reads shares off one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Histogram:
    """Cumulative buckets `(upper_bound, count)` sorted by bound, the last one `+Inf`."""

    buckets: tuple[tuple[float, float], ...]
    count: float
    sum: float

    def quantile(self, q: float) -> float | None:
        """Prometheus `histogram_quantile`: linear within the bucket; None when empty."""
        if not self.buckets or self.buckets[-1][1] <= 0 or not 0.0 <= q <= 1.0:
            return None
        rank = q * self.buckets[-1][1]
        lower_bound, lower_count = 0.0, 0.0
        for bound, cumulative in self.buckets:
            if cumulative >= rank and cumulative > lower_count:
                if math.isinf(bound):
                    return lower_bound  # the highest finite bound, as Prometheus does
                fraction = (rank - lower_count) / (cumulative - lower_count)
                return lower_bound + (bound - lower_bound) * fraction
            lower_bound, lower_count = bound, cumulative
        return lower_bound

    @property
    def mean(self) -> float | None:
        return self.sum / self.count if self.count > 0 else None

    @property
    def floor(self) -> float | None:
        """No observation lies below this: the bound of the last empty bucket before the first
        that counted (0.0 when the first did); None when empty."""
        lower = 0.0
        for bound, cumulative in self.buckets:
            if cumulative > 0:
                return lower
            lower = bound
        return None

    def since(self, earlier: Histogram | None) -> Histogram:
        """The observations made after `earlier`; all of them if the histogram was reset (its
        count or its sum went down: observations are never negative)."""
        if earlier is None or self.count < earlier.count or self.sum < earlier.sum:
            return self
        before = dict(earlier.buckets)
        deltas = tuple((b, c - before.get(b, 0.0)) for b, c in self.buckets)
        if any(d < 0 for _, d in deltas) or set(before) - {b for b, _ in self.buckets}:
            return self
        return Histogram(deltas, self.count - earlier.count, self.sum - earlier.sum)
