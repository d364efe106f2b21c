"""vLLM Prometheus `/metrics` text → `EngineMetrics` snapshots, and windows between two snapshots.

Parsing goes through `prometheus_client`'s text parser. Samples are then looked up by their exposed
name (`vllm:prompt_tokens_total`, `..._bucket`), so typed and untyped expositions both work, and
summed over label sets (several engines of one server, data parallel). Old and new names are both
accepted (`kv_cache_usage_perc`/`gpu_cache_usage_perc`, `inter_token_latency_seconds`/
`time_per_output_token_seconds`).

Rates and quantiles are windowed: the difference of two snapshots, as Prometheus' `rate()` and
`histogram_quantile()` would compute them, with a counter that went down (server restart) counted
from zero.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from cockpit.telemetry.histogram import Histogram

QUANTILES: tuple[float, ...] = (0.5, 0.9, 0.95, 0.99)

_HISTOGRAMS: dict[str, tuple[str, ...]] = {
    "ttft": ("vllm:time_to_first_token_seconds",),
    "itl": ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"),
    "tpot": ("vllm:request_time_per_output_token_seconds",),  # per request (0.32; older: none)
    "e2e": ("vllm:e2e_request_latency_seconds",),
    "queue": ("vllm:request_queue_time_seconds",),
    "prefill": ("vllm:request_prefill_time_seconds",),
    "decode": ("vllm:request_decode_time_seconds",),
}
_COUNTERS: dict[str, str] = {
    "prompt_tokens": "vllm:prompt_tokens",
    "generation_tokens": "vllm:generation_tokens",
    "prompt_tokens_cached": "vllm:prompt_tokens_cached",
    "prefix_cache_queries": "vllm:prefix_cache_queries",
    "prefix_cache_hits": "vllm:prefix_cache_hits",
    "preemptions": "vllm:num_preemptions",
    "spec_drafts": "vllm:spec_decode_num_drafts",
    "spec_draft_tokens": "vllm:spec_decode_num_draft_tokens",
    "spec_accepted_tokens": "vllm:spec_decode_num_accepted_tokens",
}


@dataclass(frozen=True)
class EngineMetrics:
    """One scrape of a vLLM server; counters are cumulative totals.

    `at` is the caller's clock (seconds) at scrape time, used only to compute rates.
    """

    at: float
    model_names: tuple[str, ...] = ()
    requests_running: float | None = None
    requests_waiting: float | None = None
    kv_cache_usage: float | None = None  # 0..1
    prompt_tokens: float | None = None
    generation_tokens: float | None = None
    prompt_tokens_cached: float | None = None
    prefix_cache_queries: float | None = None
    prefix_cache_hits: float | None = None
    preemptions: float | None = None
    spec_drafts: float | None = None
    spec_draft_tokens: float | None = None
    spec_accepted_tokens: float | None = None
    spec_accepted_per_position: Mapping[int, float] = field(default_factory=dict)
    request_success: Mapping[str, float] = field(default_factory=dict)  # by finished_reason
    http_requests: Mapping[str, float] = field(default_factory=dict)  # POST/GET by handler path
    ttft: Histogram | None = None
    itl: Histogram | None = None
    tpot: Histogram | None = None
    e2e: Histogram | None = None
    queue: Histogram | None = None
    prefill: Histogram | None = None
    decode: Histogram | None = None
    block_size: int | None = None
    num_gpu_blocks: int | None = None
    kv_cache_memory_bytes: int | None = None
    prefix_caching: bool | None = None  # `enable_prefix_caching` of `cache_config_info`
    engines: int = 1

    @property
    def pool_tokens(self) -> int | None:
        """KV pool size in tokens (block_size × num_gpu_blocks from `cache_config_info`)."""
        if self.block_size is None or self.num_gpu_blocks is None:
            return None
        return self.block_size * self.num_gpu_blocks

    @property
    def requests_finished(self) -> float | None:
        return sum(self.request_success.values()) if self.request_success else None

    @property
    def http_requests_total(self) -> float | None:
        """Answered HTTP requests of every handler: did any request reach the server at all?"""
        return sum(self.http_requests.values()) if self.http_requests else None


@dataclass(frozen=True)
class Quantiles:
    """Latency quantiles (seconds) over a window, from histogram bucket deltas.

    A quantile at or under `first_bound` lies in the first bucket, where interpolating from zero
    says nothing (vLLM's queue buckets start at 0.3 s: a 20 µs queue would read 150 ms): it is
    only known to be at most that bound."""

    count: float
    mean: float | None
    p50: float | None
    p90: float | None
    p95: float | None
    p99: float | None
    first_bound: float | None = None


@dataclass(frozen=True)
class EngineWindow:
    """What happened between two snapshots: rates per second, ratios 0..1, quantiles."""

    seconds: float
    reset: bool
    prompt_tps: float | None
    generation_tps: float | None
    requests_per_s: float | None
    prefix_hit_rate: float | None
    spec_acceptance_rate: float | None
    spec_mean_acceptance_length: float | None
    preemptions: float | None
    http_requests: float | None
    finish_reasons: Mapping[str, float]  # requests finished in the window, by finished_reason
    ttft: Quantiles | None
    itl: Quantiles | None
    tpot: Quantiles | None
    e2e: Quantiles | None
    queue: Quantiles | None
    prefill: Quantiles | None
    decode: Quantiles | None


def _int(text: str | None) -> int | None:
    try:
        return int(float(text)) if text not in (None, "", "None") else None
    except ValueError:
        return None


def _flag(values: set[str | None]) -> bool | None:
    """A boolean label ("True"/"False") that every engine agrees on; None when unknown or mixed."""
    if values == {"True"}:
        return True
    return False if values == {"False"} else None


_SUFFIXES = ("_total", "_bucket", "_count", "_sum")


def _wanted_names() -> frozenset[str]:
    names = set(_COUNTERS.values()) | {n for bases in _HISTOGRAMS.values() for n in bases}
    names |= {
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:kv_cache_usage_perc",
        "vllm:gpu_cache_usage_perc",
        "vllm:cache_config_info",
        "vllm:request_success",
        "vllm:spec_decode_num_accepted_tokens_per_pos",
        "http_requests",  # the API server's own request counter (per handler)
    }
    return frozenset(names)


_WANTED = _wanted_names()


def _wanted_lines(text: str) -> str:
    """Keep only the families read here: the library parser is the hot spot of a scrape."""
    keep: list[str] = []
    for line in text.splitlines():
        body = line[7:] if line.startswith(("# HELP ", "# TYPE ")) else line
        if not body.startswith(("vllm:", "http_requests")):
            continue
        name = body.split("{", 1)[0].split(" ", 1)[0]
        base = next((name[: -len(x)] for x in _SUFFIXES if name.endswith(x)), name)
        if name in _WANTED or base in _WANTED:
            keep.append(line)
    return "\n".join(keep) + "\n"


def _samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    """vLLM samples in `text`; on a malformed exposition, parse line by line, skip bad lines."""
    text = _wanted_lines(text)
    try:
        return [
            (s.name, dict(s.labels), float(s.value))
            for fam in text_string_to_metric_families(text)
            for s in fam.samples
        ]
    except Exception:  # the library raises several types on malformed input
        out: list[tuple[str, dict[str, str], float]] = []
        for line in text.splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            try:
                for fam in text_string_to_metric_families(line + "\n"):
                    out.extend((s.name, dict(s.labels), float(s.value)) for s in fam.samples)
            except Exception:
                continue
        return out


def parse_metrics(text: str, at: float = 0.0, model_name: str | None = None) -> EngineMetrics:
    """Parse a `/metrics` body; `model_name` keeps only that model's samples when given."""
    by_name: dict[str, list[tuple[dict[str, str], float]]] = defaultdict(list)
    models: set[str] = set()
    for name, labels, value in _samples(text):
        if math.isnan(value):
            continue
        if model_name is not None and labels.get("model_name", model_name) != model_name:
            continue
        if "model_name" in labels:
            models.add(labels["model_name"])
        by_name[name].append((labels, value))

    def total(*names: str) -> float | None:
        for name in names:
            if name in by_name:
                return sum(v for _, v in by_name[name])
        return None

    def counter(base: str) -> float | None:
        return total(base + "_total", base)

    def by_label(base: str, label: str) -> dict[str, float]:
        out: dict[str, float] = defaultdict(float)
        for labels, value in by_name.get(base + "_total", by_name.get(base, [])):
            if label in labels:
                out[labels[label]] += value
        return dict(out)

    def histogram(*bases: str) -> Histogram | None:
        for base in bases:
            rows = by_name.get(base + "_bucket")
            if not rows:
                continue
            buckets: dict[float, float] = defaultdict(float)
            for labels, value in rows:
                try:
                    buckets[float(labels.get("le", "nan"))] += value
                except ValueError:
                    continue
            ordered = tuple(sorted((b, c) for b, c in buckets.items() if not math.isnan(b)))
            return Histogram(ordered, total(base + "_count") or 0.0, total(base + "_sum") or 0.0)
        return None

    usage_rows = by_name.get("vllm:kv_cache_usage_perc") or by_name.get(
        "vllm:gpu_cache_usage_perc", []
    )
    cache_rows = [labels for labels, _ in by_name.get("vllm:cache_config_info", [])]
    blocks = [_int(c.get("num_gpu_blocks")) for c in cache_rows]
    memory = [_int(c.get("kv_cache_memory_bytes")) for c in cache_rows]
    engines = {labels.get("engine") for rows in by_name.values() for labels, _ in rows}
    per_pos = by_label("vllm:spec_decode_num_accepted_tokens_per_pos", "position")
    return EngineMetrics(
        at=at,
        model_names=tuple(sorted(models)),
        requests_running=total("vllm:num_requests_running"),
        requests_waiting=total("vllm:num_requests_waiting"),
        kv_cache_usage=(sum(v for _, v in usage_rows) / len(usage_rows)) if usage_rows else None,
        **{attr: counter(base) for attr, base in _COUNTERS.items()},
        spec_accepted_per_position={int(k): v for k, v in per_pos.items() if k.isdigit()},
        request_success=by_label("vllm:request_success", "finished_reason"),
        http_requests=by_label("http_requests", "handler"),
        **{attr: histogram(*bases) for attr, bases in _HISTOGRAMS.items()},
        block_size=_int(cache_rows[0].get("block_size")) if cache_rows else None,
        prefix_caching=_flag({c.get("enable_prefix_caching") for c in cache_rows}),
        num_gpu_blocks=sum(b for b in blocks if b) if any(blocks) else None,
        kv_cache_memory_bytes=sum(m for m in memory if m) if any(memory) else None,
        engines=max(len(engines - {None}), 1),
    )


GIB = 1024**3


def kv_pool_gib(metrics: EngineMetrics, kv_bytes_per_token: int | None) -> float | None:
    """The KV pool in GiB: the engine's `kv_cache_memory_bytes` when it reports one, else its
    blocks × block size × the lane's KV bytes per token (real vLLM reports the bytes as "None"
    unless `--kv-cache-memory-bytes` is set)."""
    if metrics.kv_cache_memory_bytes:
        return metrics.kv_cache_memory_bytes / GIB
    tokens = metrics.pool_tokens
    if tokens and kv_bytes_per_token:
        return tokens * kv_bytes_per_token / GIB
    return None


def _delta(cur: float | None, prev: float | None) -> tuple[float | None, bool]:
    """Counter increase; a decrease means the server restarted, so count from zero."""
    if cur is None or prev is None:
        return None, False
    return (cur, True) if cur < prev else (cur - prev, False)


def _quantiles(cur: Histogram | None, prev: Histogram | None) -> Quantiles | None:
    if cur is None:
        return None
    window = cur.since(prev)
    if window.count <= 0:
        return None
    q = {p: window.quantile(p) for p in QUANTILES}
    first = window.buckets[0][0] if window.buckets else None
    first = first if first is not None and not math.isinf(first) else None
    return Quantiles(window.count, window.mean, q[0.5], q[0.9], q[0.95], q[0.99], first)


def window(prev: EngineMetrics, cur: EngineMetrics) -> EngineWindow:
    """Rates, ratios and latency quantiles between two snapshots of the same endpoint(s)."""
    seconds = cur.at - prev.at
    resets: list[bool] = []

    def delta(attr: str) -> float | None:
        value, reset = _delta(getattr(cur, attr), getattr(prev, attr))
        resets.append(reset)
        return value

    def rate(value: float | None) -> float | None:
        return value / seconds if value is not None and seconds > 0 else None

    def ratio(num: float | None, den: float | None) -> float | None:
        return num / den if num is not None and den else None

    prompt, gen = delta("prompt_tokens"), delta("generation_tokens")
    queries, hits = delta("prefix_cache_queries"), delta("prefix_cache_hits")
    drafts, drafted = delta("spec_drafts"), delta("spec_draft_tokens")
    accepted = delta("spec_accepted_tokens")
    finished = delta("requests_finished")
    preemptions = delta("preemptions")
    reasons: dict[str, float] = {}
    for reason, count in cur.request_success.items():
        value, reset = _delta(count, prev.request_success.get(reason, 0.0))
        resets.append(reset)
        reasons[reason] = value or 0.0
    return EngineWindow(
        seconds=seconds,
        reset=any(resets),
        prompt_tps=rate(prompt),
        generation_tps=rate(gen),
        requests_per_s=rate(finished),
        prefix_hit_rate=ratio(hits, queries),
        spec_acceptance_rate=ratio(accepted, drafted),
        spec_mean_acceptance_length=(
            1.0 + accepted / drafts if accepted is not None and drafts else None
        ),
        preemptions=preemptions,
        http_requests=delta("http_requests_total"),
        finish_reasons=reasons,
        **{attr: _quantiles(getattr(cur, attr), getattr(prev, attr)) for attr in _HISTOGRAMS},
    )
