"""vLLM /metrics → EngineMetrics, windows between snapshots, histogram quantiles, merging."""

import pytest

from cockpit.telemetry.histogram import Histogram
from cockpit.telemetry.metrics import parse_metrics, window

REAL = "vllm-0.32-cpu/"


def test_idle_snapshot_from_real_capture(fixture_text):
    idle = parse_metrics(fixture_text(REAL + "metrics_idle.txt"), at=0.0)
    assert idle.model_names == ("tiny-llama",)
    assert idle.requests_running == 0 and idle.kv_cache_usage == 0
    assert idle.prompt_tokens == 0 and idle.generation_tokens == 0
    assert idle.block_size == 128 and idle.num_gpu_blocks == 16384
    # the same figure the engine logged: "CPU KV cache size: 2,097,152 tokens"
    assert idle.pool_tokens == 2_097_152
    assert idle.kv_cache_memory_bytes == 1 << 30
    assert idle.ttft is not None and idle.ttft.count == 0 and idle.ttft.quantile(0.5) is None
    assert idle.spec_drafts is None and idle.engines == 1


def test_under_load_snapshot_from_real_capture(fixture_text):
    load = parse_metrics(fixture_text(REAL + "metrics_under_load.txt"), at=10.0)
    assert load.requests_running == 2 and load.requests_waiting == 0
    assert load.kv_cache_usage == pytest.approx(0.0012207776353537758)
    assert load.prompt_tokens == 38930 and load.generation_tokens == 12839
    assert load.prefix_cache_queries == 38930 and load.prefix_cache_hits == 14848
    assert load.prompt_tokens_cached == 14848 and load.preemptions == 0
    assert load.request_success == {
        "stop": 2,
        "length": 102,
        "abort": 0,
        "error": 0,
        "repetition": 0,
    }
    assert load.requests_finished == 104
    assert load.http_requests["/v1/chat/completions"] == 102
    assert load.http_requests_total == 7 + 102 + 2  # /metrics scrapes are not counted
    assert load.ttft.count == 106 and load.itl.count == 12733 and load.e2e.count == 104
    assert load.queue.count == 104 and load.ttft.buckets[-1] == (float("inf"), 106.0)


def test_window_between_real_captures(fixture_text):
    idle = parse_metrics(fixture_text(REAL + "metrics_idle.txt"), at=100.0)
    load = parse_metrics(fixture_text(REAL + "metrics_under_load.txt"), at=110.0)
    w = window(idle, load)
    assert w.seconds == 10 and not w.reset
    assert w.prompt_tps == pytest.approx(3893.0) and w.generation_tps == pytest.approx(1283.9)
    assert w.requests_per_s == pytest.approx(10.4)
    assert w.prefix_hit_rate == pytest.approx(14848 / 38930)
    assert w.spec_acceptance_rate is None
    assert w.http_requests > 0
    # TTFT buckets: 44 obs <= 10 ms, 97 <= 20 ms of 106 → p50 interpolates inside (10, 20] ms
    assert w.ttft.count == 106
    assert 0.010 < w.ttft.p50 < 0.020
    assert w.ttft.p50 <= w.ttft.p90 <= w.ttft.p95 <= w.ttft.p99 <= 0.1
    assert w.ttft.mean == pytest.approx(1.6566505432128906 / 106)
    assert w.itl.p50 <= w.itl.p99 and w.e2e.count == 104


def test_window_quantiles_of_every_phase_and_finish_reasons_from_real_captures(fixture_text):
    """vLLM 0.32's per-request TPOT, queue, prefill and decode histograms, and the finished
    requests by reason, as the window between the two captures holds them."""
    idle = parse_metrics(fixture_text(REAL + "metrics_idle.txt"), at=100.0)
    load = parse_metrics(fixture_text(REAL + "metrics_under_load.txt"), at=110.0)
    assert idle.prefix_caching is True and load.prefix_caching is True  # --enable-prefix-caching
    w = window(idle, load)
    # 104 finished requests, each one TPOT (decode time / (tokens - 1)), all under 10 ms
    assert w.tpot.count == 104 and 0 < w.tpot.p50 <= w.tpot.p95 <= 0.01
    assert w.tpot.mean == pytest.approx(0.21787183461953932 / 104)
    # queue times of microseconds in a first bucket of 0.3 s: interpolation says 150 ms, so the
    # quantile is only known to be under the bound the window carries
    assert w.queue.count == 104 and w.queue.mean < 0.0001 and w.queue.first_bound == 0.3
    assert w.queue.p50 == pytest.approx(0.15) and w.ttft.first_bound == 0.001
    assert w.prefill.count == 104 and w.prefill.p95 <= 0.3
    # 102 decodes under 0.3 s, 2 long ones in (5, 10] s: p50 low, p99 in the long bucket
    assert w.decode.p50 <= 0.3 and 5.0 < w.decode.p99 <= 10.0
    assert w.finish_reasons == {"stop": 2, "length": 102, "abort": 0, "error": 0, "repetition": 0}


def test_finish_reasons_per_window_and_after_a_restart(fixture_text):
    t0 = parse_metrics(fixture_text("metrics_spec_dp2_t0.txt"), at=0.0)
    t1 = parse_metrics(fixture_text("metrics_spec_dp2_t1.txt"), at=10.0)
    assert window(t0, t1).finish_reasons == {"stop": 3, "length": 0, "abort": 0}
    assert t1.tpot is None and t1.prefix_caching is True  # older names: no per-request TPOT
    restarted = window(t1, t0)  # counters went down: counted from zero
    assert restarted.reset and restarted.finish_reasons["stop"] == 55


def test_counter_reset_counts_from_zero(fixture_text):
    load = parse_metrics(fixture_text(REAL + "metrics_under_load.txt"), at=0.0)
    restarted = parse_metrics(fixture_text(REAL + "metrics_idle.txt"), at=5.0)
    w = window(load, restarted)
    assert w.reset
    assert w.prompt_tps == 0.0 and w.generation_tps == 0.0
    assert w.ttft is None  # the restarted histogram is empty


def test_old_names_two_engines_and_spec_decode(fixture_text):
    t0 = parse_metrics(fixture_text("metrics_spec_dp2_t0.txt"), at=0.0)
    t1 = parse_metrics(fixture_text("metrics_spec_dp2_t1.txt"), at=10.0)
    assert t1.engines == 2
    assert t1.kv_cache_usage == pytest.approx((0.25 + 0.11) / 2)  # old gpu_cache_usage_perc
    assert t1.itl is not None  # old time_per_output_token_seconds
    assert t1.requests_running == 3 and t1.requests_waiting == 1
    assert t1.pool_tokens == 16 * 39000 * 2
    assert t1.spec_accepted_per_position[0] == 7054 + 6172
    w = window(t0, t1)
    assert w.prompt_tps == pytest.approx((67595 + 8192) / 10)
    assert w.generation_tps == pytest.approx(71.0)
    assert w.spec_acceptance_rate == pytest.approx((171 + 236) / (300 + 400))
    assert w.spec_mean_acceptance_length == pytest.approx(1 + (171 + 236) / (60 + 80))
    assert w.prefix_hit_rate == pytest.approx(4096 / (67595 + 8192))
    assert w.preemptions == 1 and w.requests_per_s == pytest.approx(0.3)
    # the window holds the three new TTFTs only: one of 7.9 s dominates the tail
    assert w.ttft.count == 3 and 5.0 < w.ttft.p99 <= 10.0 and w.ttft.p50 <= 0.25


def test_model_name_filter(fixture_text):
    text = fixture_text(REAL + "metrics_under_load.txt")
    assert parse_metrics(text, model_name="other").prompt_tokens is None
    assert parse_metrics(text, model_name="tiny-llama").prompt_tokens == 38930


@pytest.mark.parametrize(
    "text",
    [
        # OpenMetrics-style family name without _total in the TYPE line
        '# TYPE vllm:prompt_tokens counter\nvllm:prompt_tokens_total{model_name="m"} 5.0\n',
        # untyped exposition
        'vllm:prompt_tokens_total{model_name="m"} 5.0\n',
        # a malformed line among good ones is skipped, the rest still parses
        'vllm:prompt_tokens_total{model_name="m"} 5.0\nthis is { not prometheus\n',
    ],
)
def test_exposition_variants(text):
    assert parse_metrics(text).prompt_tokens == 5.0


@pytest.mark.parametrize("text", ["", "garbage", "<html>502 Bad Gateway</html>", "\x00\xff"])
def test_garbage_gives_empty_snapshot(text):
    snap = parse_metrics(text, at=1.0)
    assert snap.prompt_tokens is None and snap.ttft is None and snap.pool_tokens is None
    assert window(snap, snap).prompt_tps is None


def test_a_histogram_whose_sum_went_down_was_reset():
    """Observations are never negative: a lower sum is another server, even with more of them."""
    before = Histogram(((1.0, 5.0), (float("inf"), 6.0)), 6.0, 9.0)
    after = Histogram(((1.0, 7.0), (float("inf"), 8.0)), 8.0, 4.0)
    assert after.since(before) is after
    assert Histogram(((1.0, 7.0), (float("inf"), 8.0)), 8.0, 11.0).since(before).count == 2


def test_histogram_quantile_matches_prometheus_rules():
    h = Histogram(((1.0, 10.0), (2.0, 20.0), (float("inf"), 20.0)), 20.0, 25.0)
    assert h.quantile(0.5) == pytest.approx(1.0)
    assert h.quantile(0.75) == pytest.approx(1.5)
    assert h.quantile(0.25) == pytest.approx(0.5)
    tail = Histogram(((1.0, 1.0), (float("inf"), 10.0)), 10.0, 50.0)
    assert tail.quantile(0.99) == 1.0  # in the +Inf bucket: the highest finite bound
