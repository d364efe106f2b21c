"""Goodput against SLOs from histogram bucket deltas: exact on a bucket bound, a range between
two bounds otherwise, and Fréchet's bounds for the requests that met both SLOs."""

import pytest

from cockpit.telemetry.histogram import Histogram
from cockpit.telemetry.metrics import EngineMetrics, parse_metrics
from cockpit.telemetry.slo import Slo, goodput, share_within

REAL = "vllm-0.32-cpu/"
INF = float("inf")


def hist(*buckets: tuple[float, float]) -> Histogram:
    return Histogram(tuple(buckets), buckets[-1][1], 0.0)


def test_a_limit_on_a_bucket_bound_is_exact_between_bounds_a_range() -> None:
    h = hist((0.05, 60.0), (0.1, 90.0), (0.2, 95.0), (INF, 100.0))
    on = share_within(h, 0.1)
    assert on.exact and on.low == 0.9 and on.count == 100
    between = share_within(h, 0.15)
    assert (between.low, between.high) == (0.9, 0.95) and not between.exact
    assert (between.below, between.above) == (0.1, 0.2)
    assert share_within(h, 0.01).low == 0.0 and share_within(h, 0.01).high == 0.6
    beyond = share_within(h, 5.0)  # past the last finite bound: the +Inf bucket may all be in
    assert (beyond.low, beyond.high, beyond.above) == (0.95, 1.0, INF)
    assert share_within(hist((0.1, 0.0), (INF, 0.0)), 0.1) is None
    assert share_within(None, 0.1) is None


def test_goodput_on_the_real_capture(fixture_text) -> None:
    idle = parse_metrics(fixture_text(REAL + "metrics_idle.txt"), at=0.0)
    load = parse_metrics(fixture_text(REAL + "metrics_under_load.txt"), at=10.0)
    # every TTFT under 0.25 s and every TPOT under 10 ms: all 104 requests met the defaults
    good = goodput(idle, load, Slo())
    assert good.exact and good.low == 1.0 and good.ttft.count == 106 and good.tpot.count == 104
    # TTFT buckets: 44 of 106 at or under 10 ms, 97 at or under 20 ms
    tight = goodput(idle, load, Slo(ttft_s=0.015, tpot_s=0.1))
    assert tight.ttft.low == pytest.approx(44 / 106) and tight.ttft.high == pytest.approx(97 / 106)
    assert (tight.low, tight.high) == pytest.approx((44 / 106, 97 / 106))  # TPOT: all met
    assert goodput(idle, load, Slo(ttft_s=0.01, tpot_s=0.1)).exact


def test_requests_meeting_both_slos_lie_between_frechets_bounds() -> None:
    def metrics(ttft: Histogram, tpot: Histogram) -> EngineMetrics:
        return EngineMetrics(at=0.0, ttft=ttft, tpot=tpot)

    empty = metrics(hist((1.0, 0.0), (INF, 0.0)), hist((0.1, 0.0), (INF, 0.0)))
    cur = metrics(hist((1.0, 90.0), (INF, 100.0)), hist((0.1, 80.0), (INF, 100.0)))
    good = goodput(empty, cur, Slo(ttft_s=1.0, tpot_s=0.1))
    # 90 % met TTFT and 80 % TPOT: at least 70 % met both, at most 80 %
    assert good.low == pytest.approx(0.7) and good.high == pytest.approx(0.8)
    assert goodput(cur, cur, Slo()) is None  # nothing observed in the window
    old = EngineMetrics(at=0.0, ttft=cur.ttft)  # an older vLLM: no per-request TPOT
    assert goodput(old, old, Slo()) is None
