"""`/metrics` of the simulated engine: vLLM's metric names, labels and buckets (prometheus_client).

Own CollectorRegistry per engine (no process/GC collectors mixed in from other code); counters are
declared without `_total` as vLLM does, so the exposition reads `vllm:prompt_tokens_total`. All
latencies are engine seconds (see `core` on the time scale).

Rendering the exposition costs milliseconds of CPU (tens under load): `Exposition` renders it in a
worker thread, at most once per change of the metrics, so a burst of scrapes never stalls the
engine's event loop (a stall there would be multiplied by the speed into engine time).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from cockpit.sim.engine.scheduler import Request, StepResult

_TTFT = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
         10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)  # fmt: skip
_ITL = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
        20.0, 40.0, 80.0)  # fmt: skip
_REQUEST = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0,
            120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)  # fmt: skip
FINISH_REASONS = ("stop", "length", "abort", "error", "repetition")


def tokens_buckets(max_value: int) -> tuple[float, ...]:
    """vLLM's 1-2-5 buckets up to `max_value`."""
    out: list[float] = []
    exponent = 0
    while True:
        for mantissa in (1, 2, 5):
            value = mantissa * 10**exponent
            if value > max_value:
                return tuple(out)
            out.append(float(value))
        exponent += 1


class EngineMetrics:
    def __init__(
        self, model_name: str, cache_info: dict[str, str], max_model_len: int, num_spec: int
    ) -> None:
        self.registry = CollectorRegistry()
        self.version = 0
        """Bumped by every update: an exposition rendered at the same version is current."""
        labels = {"model_name": model_name, "engine": "0"}
        names = list(labels)
        r = self.registry

        def gauge(name: str, doc: str) -> Any:
            return Gauge(name, doc, names, registry=r).labels(**labels)

        def counter(name: str, doc: str) -> Any:
            return Counter(name, doc, names, registry=r).labels(**labels)

        def histogram(name: str, doc: str, buckets: tuple[float, ...]) -> Any:
            return Histogram(name, doc, names, buckets=buckets, registry=r).labels(**labels)

        self.running = gauge("vllm:num_requests_running", "Requests in model execution batches.")
        self.waiting = gauge("vllm:num_requests_waiting", "Requests waiting to be processed.")
        self.kv_usage = gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent.")
        info = Gauge(
            "vllm:cache_config_info",
            "Information of the LLMEngine CacheConfig",
            [*sorted(cache_info), "engine"],
            registry=r,
        )
        info.labels(**cache_info, engine="0").set(1)
        self.prompt_tokens = counter("vllm:prompt_tokens", "Number of prefill tokens processed.")
        self.generation_tokens = counter("vllm:generation_tokens", "Generation tokens processed.")
        self.cached_tokens = counter("vllm:prompt_tokens_cached", "Cached prompt tokens.")
        self.queries = counter("vllm:prefix_cache_queries", "Prefix cache queries, in tokens.")
        self.hits = counter("vllm:prefix_cache_hits", "Prefix cache hits, in tokens.")
        self.preemptions = counter("vllm:num_preemptions", "Cumulative number of preemptions.")
        success = Counter(
            "vllm:request_success",
            "Count of successfully processed requests.",
            [*names, "finished_reason"],
            registry=r,
        )
        self.success = {k: success.labels(**labels, finished_reason=k) for k in FINISH_REASONS}
        self.ttft = histogram("vllm:time_to_first_token_seconds", "Time to first token.", _TTFT)
        self.itl = histogram("vllm:inter_token_latency_seconds", "Inter-token latency.", _ITL)
        self.e2e = histogram("vllm:e2e_request_latency_seconds", "E2e request latency.", _REQUEST)
        self.queue = histogram("vllm:request_queue_time_seconds", "Time WAITING.", _REQUEST)
        self.inference = histogram("vllm:request_inference_time_seconds", "Time RUNNING.", _REQUEST)
        self.prefill = histogram("vllm:request_prefill_time_seconds", "Time in PREFILL.", _REQUEST)
        self.decode = histogram("vllm:request_decode_time_seconds", "Time in DECODE.", _REQUEST)
        token_buckets = tokens_buckets(max_model_len)
        self.req_prompt = histogram(
            "vllm:request_prompt_tokens", "Prefill tokens per request.", token_buckets
        )
        self.req_generation = histogram(
            "vllm:request_generation_tokens", "Generation tokens per request.", token_buckets
        )
        self.iteration = histogram(
            "vllm:iteration_tokens_total", "Tokens per engine step.", tokens_buckets(16384)
        )
        self.spec: tuple[Any, Any, Any, list[Any]] | None = None
        if num_spec > 0:
            per_pos = Counter(
                "vllm:spec_decode_num_accepted_tokens_per_pos",
                "Accepted tokens per draft position.",
                [*names, "position"],
                registry=r,
            )
            self.spec = (
                counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts."),
                counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens."),
                counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens."),
                [per_pos.labels(**labels, position=str(p)) for p in range(num_spec)],
            )

    def on_step(
        self, result: StepResult, running: int, waiting: int, usage: float, itl: list[float]
    ) -> None:
        """Account one step; `itl`: per request, the gap since its previous output."""
        self.version += 1
        self.running.set(running)
        self.waiting.set(waiting)
        self.kv_usage.set(usage)
        self.prompt_tokens.inc(result.prompt_tokens)
        self.generation_tokens.inc(result.generation_tokens)
        self.queries.inc(result.prefix_queries)
        self.hits.inc(result.prefix_hits)
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
            self.cached_tokens.inc(request.num_cached_tokens)

    def on_finished(self, request: Request) -> None:
        self.version += 1
        reason = request.finish_reason or "stop"
        self.success[reason if reason in self.success else "error"].inc()
        end = request.finished_at or request.arrival
        self.e2e.observe(end - request.arrival)
        self.req_prompt.observe(request.prompt_len)
        self.req_generation.observe(request.num_output)
        scheduled = request.first_scheduled_at
        if scheduled is not None:
            self.queue.observe(scheduled - request.arrival)
            self.inference.observe(end - scheduled)
            if request.first_token_at is not None:
                self.prefill.observe(request.first_token_at - scheduled)
                self.decode.observe(end - request.first_token_at)

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
