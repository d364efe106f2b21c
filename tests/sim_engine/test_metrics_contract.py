"""The simulator's /metrics held to a real vLLM 0.32 server's (captures in fixtures/telemetry).

Both expositions are parsed with prometheus_client and compared family by family: type, HELP,
label names and histogram bucket bounds; the simulator may not have a `vllm:` family the real
server lacks (speculative decoding aside: the captured server ran without it). The captures were
taken with `--max-model-len 4096`, so the simulated engine is built with the same length (the
token-count histograms' buckets follow it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cockpit.telemetry.metrics import parse_metrics
from cockpit_sim.engine.calibration import for_lane
from cockpit_sim.engine.metrics import EngineMetrics, cache_config_info
from cockpit_sim.engine.scheduler import Request, Scheduler, SchedulerConfig

CAPTURES = Path(__file__).parents[1] / "fixtures" / "telemetry" / "vllm-0.32-cpu"
SPEC_FAMILIES = {
    "vllm:spec_decode_num_drafts",
    "vllm:spec_decode_num_draft_tokens",
    "vllm:spec_decode_num_accepted_tokens",
    "vllm:spec_decode_num_accepted_tokens_per_pos",
}


@dataclass(frozen=True)
class Family:
    type: str
    help: str
    labels: frozenset[str]
    buckets: tuple[str, ...]


def capture_text(name: str) -> str:
    return (CAPTURES / name).read_text(encoding="utf-8")


def families(text: str) -> dict[str, Family]:
    out = {}
    for fam in text_string_to_metric_families(text):
        labels = frozenset(k for s in fam.samples for k in s.labels if k not in ("le", "quantile"))
        buckets = []
        for s in fam.samples:
            if s.name.endswith("_bucket") and s.labels["le"] not in buckets:
                buckets.append(s.labels["le"])
        out[fam.name] = Family(fam.type, fam.documentation, labels, tuple(buckets))
    return out


def _cache_info(**overrides: object) -> dict[str, str]:
    values: dict = dict(
        block_size=16,
        user_block_size=False,
        cache_dtype="auto",
        gpu_memory_utilization=0.92,
        enable_prefix_caching=True,
        num_gpu_blocks=16384,
        num_gpu_blocks_override=None,
        kv_cache_memory_bytes=None,
        max_model_len=4096,
    )
    return cache_config_info(**(values | overrides))


def simulated(num_spec: int = 0) -> tuple[EngineMetrics, str]:
    """An engine's metrics after a request went through the scheduler, and its exposition."""
    metrics = EngineMetrics("tiny-llama", _cache_info(), 4096, num_spec)
    sched = Scheduler(for_lane("small", 1), SchedulerConfig(num_spec_tokens=num_spec))
    request = Request("r1", list(range(300)), max_tokens=20, arrival=0.0, ignore_eos=True)
    sched.add(request)
    now = 0.0
    while sched.has_work:
        result = sched.step(now)
        now += result.duration
        if any(t.first for t in result.tokens):
            metrics.on_first_token(request)
        metrics.on_step(result, len(sched.running), len(sched.waiting), sched.pool.usage, [0.01])
    metrics.on_finished(request)
    metrics.on_http("/v1/completions", "POST", 200, 512, 0, 0.2)
    metrics.on_http("/metrics", "GET", 200, 0, 9000, 0.01)
    return metrics, metrics.render().decode()


@pytest.mark.parametrize("capture", ["metrics_idle.txt", "metrics_under_load.txt"])
def test_every_real_family_is_there_with_its_type_help_labels_and_buckets(
    capture: str,
) -> None:
    real = families(capture_text(capture))
    _, text = simulated()
    sim = families(text)
    for name, want in real.items():
        assert name in sim, name
        got = sim[name]
        assert (got.type, got.help) == (want.type, want.help), name
        assert got.labels == want.labels, (name, sorted(got.labels ^ want.labels))
        assert got.buckets == want.buckets, name


def test_nothing_invented_and_spec_decode_only_with_drafts() -> None:
    real = families(capture_text("metrics_under_load.txt"))
    created = {f"{n}_created" for n in SPEC_FAMILIES}
    for num_spec, allowed in ((0, set()), (5, SPEC_FAMILIES | created)):
        _, text = simulated(num_spec)
        extra = set(families(text)) - set(real)
        assert extra == allowed, sorted(extra ^ allowed)


def test_cache_config_info_has_the_real_labels_and_no_memory_figure_by_default() -> None:
    real = families(capture_text("metrics_idle.txt"))["vllm:cache_config_info"]
    assert len(real.labels) == 37
    info = _cache_info()
    assert set(info) | {"engine"} == set(real.labels)
    assert info["kv_cache_memory_bytes"] == "None" and info["num_gpu_blocks_override"] == "None"
    assert info["kv_cache_size_tokens"] == str(16 * 16384)  # a real label, not an invention
    flagged = _cache_info(kv_cache_memory_bytes=8 << 30, num_gpu_blocks_override=100)
    assert flagged["kv_cache_memory_bytes"] == str(8 << 30)
    assert flagged["num_gpu_blocks_override"] == "100"
    _, text = simulated()
    parsed = parse_metrics(text)
    assert parsed.kv_cache_memory_bytes is None
    assert parsed.pool_tokens == 16 * 16384


def test_the_new_families_carry_consistent_values() -> None:
    _, text = simulated()
    m = {
        (s.name, tuple(sorted((k, v) for k, v in s.labels.items() if k not in ENGINE_LABELS))): s
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
    }

    def value(name: str, **labels: str) -> float:
        return m[(name, tuple(sorted(labels.items())))].value

    prompt = value("vllm:prompt_tokens_total")
    assert prompt == 300
    by_source = [
        value("vllm:prompt_tokens_by_source_total", source=s)
        for s in ("local_compute", "local_cache_hit", "external_kv_transfer")
    ]
    assert sum(by_source) == prompt
    assert value("vllm:request_params_max_tokens_sum") == 20
    assert value("vllm:request_max_num_generation_tokens_sum") == 20
    assert value("vllm:request_params_n_count") == 1
    assert value("vllm:request_prefill_kv_computed_tokens_sum") == 300
    assert value("vllm:request_time_per_output_token_seconds_count") == 1
    assert value("vllm:request_time_per_output_token_seconds_sum") > 0
    assert value("vllm:engine_sleep_state", sleep_state="awake") == 1
    # the HTTP families count what vLLM's instrumentator counts: not /metrics, /health, ...
    assert value("http_requests_total", handler="/v1/completions", method="POST", status="2xx") == 1
    assert not any(k[0] == "http_requests_total" and ("handler", "/metrics") in k[1] for k in m)
    assert value("process_open_fds") > 0 and value("process_resident_memory_bytes") > 0
    assert any(k[0] == "python_info" for k in m)


ENGINE_LABELS = ("engine", "model_name")
