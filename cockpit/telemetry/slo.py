"""Goodput: the share of requests that met the operator's SLOs, from histogram bucket deltas.

vLLM does not record which request met which latency, only how many observations fell at or under
each bucket bound. So the share of requests within an SLO is known only between two bounds: the
observations at or under the largest bound not above the SLO certainly met it (the low end), those
at or under the smallest bound not below it may have (the high end). An SLO set on a bucket bound
makes the share exact. TTFT and TPOT are separate histograms, so which requests met both is not
recorded either: the joint share lies between max(0, a + b - 1) and min(a, b) (Fréchet's bounds),
taken at the low and the high ends of the two shares. Nothing here interpolates inside a bucket.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from cockpit.telemetry.histogram import Histogram
from cockpit.telemetry.metrics import EngineMetrics


@dataclass(frozen=True)
class Slo:
    """Latency objectives per request, in seconds (`[slo]` of tui.toml, in milliseconds there).

    The defaults sit on bucket bounds of vLLM's histograms, so each share is exact."""

    ttft_s: float = 2.5
    tpot_s: float = 0.1


DEFAULT_SLO = Slo()


@dataclass(frozen=True)
class Share:
    """The share (0..1) of a window's observations within a limit, between two bucket bounds."""

    low: float
    high: float
    count: float  # observations in the window
    below: float  # the bucket bound the low end counts up to (0.0: none below the limit)
    above: float  # the bucket bound the high end counts up to (inf: beyond the last bound)

    @property
    def exact(self) -> bool:
        return self.low == self.high


def share_within(histogram: Histogram | None, limit: float) -> Share | None:
    """The share of `histogram`'s observations at or under `limit`; None when it has none."""
    if histogram is None or not histogram.buckets or histogram.buckets[-1][1] <= 0:
        return None
    total = histogram.buckets[-1][1]
    below, low = 0.0, 0.0
    above, high = math.inf, total
    for bound, cumulative in histogram.buckets:
        on_limit = math.isclose(bound, limit, rel_tol=1e-9)
        if bound <= limit or on_limit:
            below, low = bound, cumulative
        if bound >= limit or on_limit:
            above, high = bound, cumulative
            break
    return Share(low / total, high / total, total, below, above)


@dataclass(frozen=True)
class Goodput:
    """Requests of a window that met both SLOs: a range (see the module's docstring)."""

    low: float
    high: float
    ttft: Share
    tpot: Share

    @property
    def exact(self) -> bool:
        return math.isclose(self.low, self.high, abs_tol=1e-9)  # a + b - 1 rounds


def goodput(prev: EngineMetrics, cur: EngineMetrics, slo: Slo) -> Goodput | None:
    """Goodput between two snapshots; None unless both histograms observed requests in between
    (an older vLLM has no per-request TPOT histogram: no goodput, rather than a guess)."""
    if cur.ttft is None or cur.tpot is None:
        return None
    ttft = share_within(cur.ttft.since(prev.ttft), slo.ttft_s)
    tpot = share_within(cur.tpot.since(prev.tpot), slo.tpot_s)
    if ttft is None or tpot is None:
        return None
    low = max(0.0, ttft.low + tpot.low - 1.0)
    high = min(ttft.high, tpot.high)
    return Goodput(low, high, ttft, tpot)
