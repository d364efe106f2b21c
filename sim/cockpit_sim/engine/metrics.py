"""`/metrics` of the simulated engine: vLLM 0.32's families, HELP texts, labels and buckets.

Held to the real server's exposition by tests/sim_engine/test_metrics_contract.py, which parses the
captures of a real `vllm serve` (tests/fixtures/telemetry/vllm-0.32-cpu/) and this module's output
with prometheus_client and compares every family's type, HELP, label names and bucket bounds. The
bucket families are vLLM's (`vllm/v1/metrics/buckets.py`); token-count histograms use 1-2-5 buckets
up to max-model-len. Labels are declared in sorted order, as the real (multiprocess) exposition
prints them. Besides the `vllm:` families the registry carries what a real server's has: the
Python/process collectors of prometheus_client (this process's own figures) and the HTTP families
of prometheus-fastapi-instrumentator (`HttpMetrics`, fed by the server's middleware).

Counters are declared without `_total`, as vLLM does, so the exposition reads
`vllm:prompt_tokens_total`. All latencies are engine seconds (see `core` on the time scale).

Rendering the exposition costs milliseconds of CPU (tens under load): `Exposition` renders it in a
worker thread, at most once per change of the metrics, so a burst of scrapes never stalls the
engine's event loop (a stall there would be multiplied by the speed into engine time).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    Summary,
    generate_latest,
)

from cockpit_sim.engine.scheduler import Request, StepResult

REQUEST_LATENCY = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
                   60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)  # fmt: skip
TIME_TO_FIRST_TOKEN = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
                       5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)  # fmt: skip
INTER_TOKEN_LATENCY = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
                       5.0, 7.5, 10.0, 20.0, 40.0, 80.0)  # fmt: skip
ITERATION_TOKENS = (1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
REQUEST_PARAMS_N = (1, 2, 5, 10, 20)
REQUEST_NUM_PREEMPTIONS = (1, 2, 3, 4, 5, 10, 20)
HTTP_HIGHR = (0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0,
              4.5, 5.0, 7.5, 10.0, 30.0, 60.0)  # fmt: skip
HTTP_BY_HANDLER = (0.1, 0.5, 1.0)
FINISH_REASONS = ("stop", "length", "abort", "error", "repetition")
HTTP_EXCLUDED = frozenset({"/metrics", "/health", "/load", "/ping", "/version", "/server_info"})
"""Handlers vLLM's Instrumentator leaves out of the HTTP families."""
ENGINE = ("engine", "model_name")


def tokens_buckets(max_value: int) -> tuple[float, ...]:
    """vLLM's 1-2-5 buckets up to `max_value` (`build_1_2_5_buckets`)."""
    out: list[float] = []
    exponent = 0
    while True:
        for mantissa in (1, 2, 5):
            value = mantissa * 10**exponent
            if value > max_value:
                return tuple(out)
            out.append(float(value))
        exponent += 1


def cache_config_info(
    *,
    block_size: int,
    user_block_size: bool,
    cache_dtype: str,
    gpu_memory_utilization: float,
    enable_prefix_caching: bool,
    num_gpu_blocks: int,
    num_gpu_blocks_override: int | None,
    kv_cache_memory_bytes: int | None,
    max_model_len: int,
) -> dict[str, str]:
    """The labels of `vllm:cache_config_info`: `CacheConfig.metrics_info()` of vLLM 0.32 after the
    engine sized its pool (every field as `str(value)`, unset ones "None")."""
    tokens = num_gpu_blocks * block_size
    return {
        "block_size": str(block_size),
        "user_specified_block_size": str(user_block_size),
        "kv_cache_layout": "None",
        "prefix_match_unit": "None",
        "gpu_memory_utilization": str(gpu_memory_utilization),
        "cache_dtype": cache_dtype,
        "is_attention_free": "False",
        "num_gpu_blocks_override": str(num_gpu_blocks_override),
        "sliding_window": "None",
        "enable_prefix_caching": str(enable_prefix_caching),
        "prefix_caching_hash_algo": "sha256",
        "prefix_cache_retention_interval": "0",
        "kv_cache_dtype_skip_layers": "[]",
        "mamba_page_size_padded": "None",
        "skip_page_size_padded": "None",
        "mamba_block_size": "None",
        "mamba_cache_dtype": "auto",
        "mamba_ssm_cache_dtype": "auto",
        "mamba_cache_mode": "none",
        "enable_mamba_shared_prefix_checkpoint": "False",
        "replayssm_buffer_len": "16",
        "use_replayssm": "False",
        "use_kda_recoverssm": "False",
        "num_gpu_blocks": str(num_gpu_blocks),
        "num_cpu_blocks": "None",
        "effective_attention_block_size": str(block_size),
        "kv_cache_size_tokens": str(tokens),
        "kv_cache_max_concurrency": str(tokens / max_model_len),
        "hash_block_size": "None",
        "cache_hit_alignment_tokens": "None",
        "kv_sharing_fast_prefill": "False",
        "swa_bounded_replay": "True",
        "kv_cache_memory_bytes": str(kv_cache_memory_bytes),
        "kv_offloading_size": "None",
        "kv_offloading_backend": "native",
        "_block_size_resolved": "True",
    }


class HttpMetrics:
    """prometheus-fastapi-instrumentator's families as vLLM registers them (handler = route)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        self.requests = Counter(
            "http_requests",
            "Total number of requests by method, status and handler.",
            ["handler", "method", "status"],
            registry=r,
        )
        self.request_size = Summary(
            "http_request_size_bytes",
            "Content length of incoming requests by handler. Only value of header is respected. "
            "Otherwise ignored. No percentile calculated. ",
            ["handler"],
            registry=r,
        )
        self.response_size = Summary(
            "http_response_size_bytes",
            "Content length of outgoing responses by handler. Only value of header is respected. "
            "Otherwise ignored. No percentile calculated. ",
            ["handler"],
            registry=r,
        )
        self.highr = Histogram(
            "http_request_duration_highr_seconds",
            "Latency with many buckets but no API specific labels. Made for more accurate "
            "percentile calculations. ",
            buckets=HTTP_HIGHR,
            registry=r,
        )
        self.duration = Histogram(
            "http_request_duration_seconds",
            "Latency with only few buckets by handler. Made to be only used if aggregation by "
            "handler is important. ",
            ["handler", "method"],
            buckets=HTTP_BY_HANDLER,
            registry=r,
        )

    def observe(
        self,
        handler: str,
        method: str,
        status: int,
        request_bytes: int,
        response_bytes: int,
        seconds: float,
    ) -> None:
        """One answered request (`handler` is the route template, "none" when none matched)."""
        if handler in HTTP_EXCLUDED:
            return
        self.requests.labels(handler=handler, method=method, status=f"{status // 100}xx").inc()
        self.request_size.labels(handler=handler).observe(request_bytes)
        self.response_size.labels(handler=handler).observe(response_bytes)
        self.highr.observe(seconds)
        self.duration.labels(handler=handler, method=method).observe(seconds)


class EngineMetrics:
    def __init__(
        self, model_name: str, cache_info: dict[str, str], max_model_len: int, num_spec: int
    ) -> None:
        self.registry = CollectorRegistry()
        self.version = 0
        """Bumped by every update: an exposition rendered at the same version is current."""
        r = self.registry
        for collector in (GC_COLLECTOR, PLATFORM_COLLECTOR, PROCESS_COLLECTOR):
            r.register(collector)
        labels = {"engine": "0", "model_name": model_name}

        def gauge(name: str, doc: str) -> Any:
            return Gauge(name, doc, ENGINE, registry=r).labels(**labels)

        def counter(name: str, doc: str) -> Any:
            return Counter(name, doc, ENGINE, registry=r).labels(**labels)

        def by(kind: type, name: str, doc: str, label: str, values: tuple[str, ...]) -> Any:
            family = kind(name, doc, sorted([*ENGINE, label]), registry=r)
            return {v: family.labels(**labels, **{label: v}) for v in values}

        def histogram(name: str, doc: str, buckets: tuple[float, ...]) -> Any:
            return Histogram(name, doc, ENGINE, buckets=buckets, registry=r).labels(**labels)

        per_gpu = "(for Model Flops Utilization calculations)."
        counter(
            "vllm:estimated_flops_per_gpu",
            f"Estimated number of floating point operations per GPU {per_gpu}",
        )
        counter(
            "vllm:estimated_read_bytes_per_gpu",
            f"Estimated number of bytes read from memory per GPU {per_gpu}",
        )
        counter(
            "vllm:estimated_write_bytes_per_gpu",
            f"Estimated number of bytes written to memory per GPU {per_gpu}",
        )  # fmt: skip
        self.running = gauge("vllm:num_requests_running",
                             "Number of requests in model execution batches.")  # fmt: skip
        self.waiting = gauge("vllm:num_requests_waiting",
                             "Number of requests waiting to be processed.")  # fmt: skip
        self.waiting_by = by(
            Gauge,
            "vllm:num_requests_waiting_by_reason",
            "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for "
            "scheduling capacity; 'deferred' = deferred by transient constraints (LoRA budget, KV "
            "transfer, blocked status). Sum of all reasons equals vllm:num_requests_waiting.",
            "reason",
            ("capacity", "deferred"),
        )
        sleep = by(
            Gauge,
            "vllm:engine_sleep_state",
            "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is "
            "awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep "
            "level 2.",
            "sleep_state",
            ("awake", "weights_offloaded", "discard_all"),
        )
        sleep["awake"].set(1)
        self.kv_usage = gauge("vllm:kv_cache_usage_perc",
                              "KV-cache usage. 1 means 100 percent usage.")  # fmt: skip
        self.queries = counter(
            "vllm:prefix_cache_queries",
            "Prefix cache queries, in terms of number of queried tokens.",
        )
        self.hits = counter(
            "vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens."
        )
        kv_connector = "External prefix cache {} from KV connector cross-instance cache sharing, "
        counter(
            "vllm:external_prefix_cache_queries",
            kv_connector.format("queries") + "in terms of number of queried tokens.",
        )
        counter(
            "vllm:external_prefix_cache_hits",
            kv_connector.format("hits") + "in terms of number of cached tokens.",
        )
        counter(
            "vllm:mm_cache_queries",
            "Multi-modal cache queries, in terms of number of queried items.",
        )
        counter("vllm:mm_cache_hits", "Multi-modal cache hits, in terms of number of cached items.")
        self.preemptions = counter(
            "vllm:num_preemptions", "Cumulative number of preemption from the engine."
        )
        self.prompt_tokens = counter("vllm:prompt_tokens", "Number of prefill tokens processed.")
        self.prompt_by_source = by(
            Counter,
            "vllm:prompt_tokens_by_source",
            "Number of prompt tokens by source.",
            "source",
            ("local_compute", "local_cache_hit", "external_kv_transfer"),
        )
        self.cached_tokens = counter(
            "vllm:prompt_tokens_cached", "Number of cached prompt tokens (local + external)."
        )
        self.cached_by_source = by(
            Counter,
            "vllm:prompt_tokens_cached_by_source",
            "Prefix-cache hit tokens by the cache tier that supplied them: device (local HBM), "
            "host (offloaded to DRAM), disk, p2p (transferred from another vLLM instance) or "
            "external_unspecified. Counted at admission; sums to vllm:prefix_cache_hits + "
            "vllm:external_prefix_cache_hits.",
            "source",
            ("device", "host", "p2p", "disk", "external_unspecified"),
        )
        self.generation_tokens = counter(
            "vllm:generation_tokens", "Number of generation tokens processed."
        )
        self.success = by(
            Counter,
            "vllm:request_success",
            "Count of successfully processed requests.",
            "finished_reason",
            FINISH_REASONS,
        )
        rejections = Counter(
            "vllm:admission_rejections",
            "Number of admission attempts rejected by a queue limit, by reason.",
            ["model_name", "reason"],
            registry=r,
        )
        for reason in ("max_num_queued_reqs", "max_num_queued_tokens"):
            rejections.labels(model_name=model_name, reason=reason)
        tokens = tokens_buckets(max_model_len)
        self.req_prompt = histogram(
            "vllm:request_prompt_tokens", "Number of prefill tokens processed.", tokens
        )
        self.req_generation = histogram(
            "vllm:request_generation_tokens", "Number of generation tokens processed.", tokens
        )
        self.iteration = histogram(
            "vllm:iteration_tokens_total",
            "Histogram of number of tokens per engine_step.",
            ITERATION_TOKENS,
        )
        self.req_max_generation = histogram(
            "vllm:request_max_num_generation_tokens",
            "Histogram of maximum number of requested generation tokens.",
            tokens,
        )
        self.params_n = histogram(
            "vllm:request_params_n", "Histogram of the n request parameter.", REQUEST_PARAMS_N
        )
        self.params_max_tokens = histogram(
            "vllm:request_params_max_tokens",
            "Histogram of the max_tokens request parameter.",
            tokens,
        )
        self.ttft = histogram(
            "vllm:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
            TIME_TO_FIRST_TOKEN,
        )
        self.itl = histogram(
            "vllm:inter_token_latency_seconds",
            "Histogram of inter-token latency in seconds.",
            INTER_TOKEN_LATENCY,
        )
        self.tpot = histogram(
            "vllm:request_time_per_output_token_seconds",
            "Histogram of time_per_output_token_seconds per request.",
            INTER_TOKEN_LATENCY,
        )
        self.e2e = histogram(
            "vllm:e2e_request_latency_seconds",
            "Histogram of e2e request latency in seconds.",
            REQUEST_LATENCY,
        )
        phase = "Histogram of time spent in {} phase for request."
        self.queue = histogram(
            "vllm:request_queue_time_seconds", phase.format("WAITING"), REQUEST_LATENCY
        )
        self.inference = histogram(
            "vllm:request_inference_time_seconds", phase.format("RUNNING"), REQUEST_LATENCY
        )
        self.prefill = histogram(
            "vllm:request_prefill_time_seconds", phase.format("PREFILL"), REQUEST_LATENCY
        )
        self.decode = histogram(
            "vllm:request_decode_time_seconds", phase.format("DECODE"), REQUEST_LATENCY
        )
        self.req_preemptions = histogram(
            "vllm:request_num_preemptions",
            "Histogram of the number of times a request was preempted.",
            REQUEST_NUM_PREEMPTIONS,
        )
        self.req_computed = histogram(
            "vllm:request_prefill_kv_computed_tokens",
            "Histogram of new KV tokens computed during prefill (excluding cached tokens).",
            tokens,
        )
        info = Gauge(
            "vllm:cache_config_info",
            "Information of the LLMEngine CacheConfig",
            sorted([*cache_info, "engine"]),
            registry=r,
        )
        info.labels(**cache_info, engine="0").set(1)
        self.spec: tuple[Any, Any, Any, list[Any]] | None = None
        if num_spec > 0:
            per_pos = Counter(
                "vllm:spec_decode_num_accepted_tokens_per_pos",
                "Accepted tokens per draft position.",
                [*ENGINE, "position"],
                registry=r,
            )
            self.spec = (
                counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts."),
                counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens."),
                counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens."),
                [per_pos.labels(**labels, position=str(p)) for p in range(num_spec)],
            )  # fmt: skip
        self.http = HttpMetrics(r)

    def on_step(
        self, result: StepResult, running: int, waiting: int, usage: float, itl: list[float]
    ) -> None:
        """Account one step; `itl`: per request, the gap since its previous output."""
        self.version += 1
        self.running.set(running)
        self.waiting.set(waiting)
        self.waiting_by["capacity"].set(waiting)
        self.kv_usage.set(usage)
        self.prompt_tokens.inc(result.prompt_tokens)
        self.generation_tokens.inc(result.generation_tokens)
        self.queries.inc(result.prefix_queries)
        self.hits.inc(result.prefix_hits)
        self.cached_by_source["device"].inc(result.prefix_hits)
        self.preemptions.inc(result.preemptions)
        tokens = result.shape.prefill_tokens + len(result.shape.decode_depths)
        if tokens:
            self.iteration.observe(tokens)
        for gap in itl:
            self.itl.observe(gap)
        if self.spec is not None and result.spec.drafts:
            drafts, draft_tokens, accepted, per_pos = self.spec
            drafts.inc(result.spec.drafts)
            draft_tokens.inc(result.spec.draft_tokens)
            accepted.inc(result.spec.accepted)
            for pos, n in enumerate(result.spec.accepted_per_pos):
                per_pos[pos].inc(n)

    def on_first_token(self, request: Request) -> None:
        self.version += 1
        if request.first_token_at is not None:
            self.ttft.observe(request.first_token_at - request.arrival)
            cached = request.num_cached_tokens
            self.cached_tokens.inc(cached)
            self.prompt_by_source["local_cache_hit"].inc(cached)
            self.prompt_by_source["local_compute"].inc(request.prompt_len - cached)

    def on_finished(self, request: Request) -> None:
        self.version += 1
        reason = request.finish_reason or "stop"
        self.success[reason if reason in self.success else "error"].inc()
        end = request.finished_at or request.arrival
        self.e2e.observe(end - request.arrival)
        self.req_prompt.observe(request.prompt_len)
        self.req_generation.observe(request.num_output)
        self.req_max_generation.observe(request.num_output)
        self.params_n.observe(1)
        self.params_max_tokens.observe(request.max_tokens)
        self.req_preemptions.observe(request.num_preemptions)
        self.req_computed.observe(request.prompt_len - request.num_cached_tokens)
        scheduled = request.first_scheduled_at
        if scheduled is not None:
            self.queue.observe(scheduled - request.arrival)
            self.inference.observe(end - scheduled)
            if request.first_token_at is not None:
                self.prefill.observe(request.first_token_at - scheduled)
                decode = end - request.first_token_at
                self.decode.observe(decode)
                self.tpot.observe(
                    decode / (request.num_output - 1) if request.num_output > 1 else 0
                )

    def on_http(self, *args: Any) -> None:
        """One answered HTTP request (see `HttpMetrics.observe`)."""
        self.version += 1
        self.http.observe(*args)

    def render(self) -> bytes:
        return generate_latest(self.registry)


RENDER_EVERY_WALL_S = 0.25
"""Renders start at most this often: a scrape storm costs the engine a bounded share of the CPU."""


class Exposition:
    """The `/metrics` body of one engine, rendered off the event loop and shared by scrapes.

    prometheus_client reads every value under its own lock, so rendering in a thread while the
    loop keeps counting is safe (a scrape is not atomic on a real vLLM either). A scrape gets a
    body rendered after it asked, or the last one if the metrics have not changed since; scrapes
    arriving together share one render.
    """

    def __init__(self, metrics: EngineMetrics) -> None:
        self.metrics = metrics
        self._lock = asyncio.Lock()
        self._body = b""
        self._version = -1
        self._rendered_from = 0.0

    async def body(self) -> bytes:
        asked = time.monotonic()
        async with self._lock:
            version = self.metrics.version
            if version != self._version and self._rendered_from < asked:
                due = self._rendered_from + RENDER_EVERY_WALL_S
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                started, version = time.monotonic(), self.metrics.version
                self._body = await asyncio.to_thread(self.metrics.render)
                self._version, self._rendered_from = version, started
            return self._body
