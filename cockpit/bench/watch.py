"""Engine counters around bench batches, and the hang watchdog built on them.

A bench must not disturb what it measures: `/metrics` renders dozens of histograms (tens of ms of
the server's CPU, and on the single-process simulator tens of ms of its engine loop), so scrapes
are few: one before and one after every measured batch (the honesty checks need the counters'
movement over it), and, for the watchdog, one whenever the client has been idle for `interval`
(a long prefill sends nothing, but the engine's step counter moves). Only the handful of counters
needed are read, by a line scan (a full parse costs ~35 ms on a 45 KB exposition).

The watchdog declares a point hung when neither our client made progress (a request sent, a
byte received) nor any engine counter moved for `timeout` wall seconds: the seed's §4.1 client
sat idle for 30+ minutes with zero POSTs reaching a healthy engine, and nobody knew.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from dataclasses import dataclass

import httpx

from cockpit.bench.client import Clock
from cockpit.bench.method import decode_bound

_NAMES = {
    "vllm:prompt_tokens_total": "prompt",
    "vllm:prompt_tokens_cached_total": "cached",
    "vllm:generation_tokens_total": "generation",
    "vllm:num_requests_running": "running",
    "vllm:num_requests_waiting": "waiting",
    "vllm:request_success_total": "finished",
    "vllm:e2e_request_latency_seconds_count": "e2e",
    "vllm:iteration_tokens_total_count": "steps",
    "vllm:request_time_per_output_token_seconds_sum": "tpot_sum",
    "vllm:request_time_per_output_token_seconds_count": "tpot_count",
}


@dataclass(frozen=True)
class Counters:
    """The engine counters a bench needs, summed over label sets; `at` in the bench clock."""

    at: float
    prompt: float | None = None
    cached: float | None = None
    generation: float | None = None
    running: float | None = None
    waiting: float | None = None
    finished: float | None = None
    e2e: float | None = None
    steps: float | None = None
    tpot_sum: float | None = None  # the engine's own time per output token, summed per request
    tpot_count: float | None = None
    tpot_buckets: tuple[tuple[float, float], ...] = ()  # (le, cumulative count), le ascending

    @property
    def computed_prompt(self) -> float | None:
        """Prompt tokens the engine actually prefilled (prefix-cache hits excluded)."""
        if self.prompt is None:
            return None
        return self.prompt - (self.cached or 0.0)

    def decode_bound_since(self, before: Counters | None) -> float | None:
        """The fastest per-stream decode rate the engine allows for the requests finished since
        `before`, None when it does not say.

        One request: 1 / its time per output token. Several: their mean would be the bound of
        none of them (at c2 cold one stream stalls behind the other's prefill, the other decodes
        clean), so the bound is 1 / the lower edge of the lowest histogram bucket that moved:
        no request's time per token was below it. None when that bucket starts at 0.
        """
        if before is None or None in (
            self.tpot_sum,
            self.tpot_count,
            before.tpot_sum,
            before.tpot_count,
        ):
            return None
        assert self.tpot_sum is not None and self.tpot_count is not None
        assert before.tpot_sum is not None and before.tpot_count is not None
        count = self.tpot_count - before.tpot_count
        if count <= 1:
            return decode_bound(self.tpot_sum - before.tpot_sum, count)
        return fastest_bound(self.tpot_buckets, before.tpot_buckets)

    def signature(self) -> tuple[float | None, ...]:
        """What changes when the engine receives or serves anything."""
        return (
            self.prompt,
            self.generation,
            self.running,
            self.waiting,
            self.finished,
            self.e2e,
            self.steps,
        )


_TPOT_BUCKET = "vllm:request_time_per_output_token_seconds_bucket"
_LE = re.compile(r'le="([^"]+)"')


def fastest_bound(
    after: tuple[tuple[float, float], ...], before: tuple[tuple[float, float], ...]
) -> float | None:
    """1 / the lower edge of the lowest time-per-token bucket that counted a request between two
    scrapes; None when nothing moved or the lowest moved bucket starts at 0."""
    was = dict(before)
    lower = 0.0
    for le, count in after:
        if count - was.get(le, 0.0) > 0:
            return 1.0 / lower if lower > 0 else None
        lower = le
    return None


def scan_counters(text: str, at: float) -> Counters:
    """The counters of a Prometheus exposition, by line scan (one histogram's buckets only)."""
    sums: dict[str, float] = {}
    buckets: dict[float, float] = {}
    for line in text.splitlines():
        if not line.startswith("vllm:"):
            continue
        name_end = min((i for i in (line.find("{"), line.find(" ")) if i > 0), default=-1)
        if name_end < 0:
            continue
        if line[:name_end] == _TPOT_BUCKET:
            le = _LE.search(line)
            try:
                edge, value = float(le.group(1)) if le else math.nan, float(line.rsplit(" ", 1)[1])
            except (IndexError, ValueError):
                continue
            if math.isfinite(edge):
                buckets[edge] = buckets.get(edge, 0.0) + value
            continue
        field = _NAMES.get(line[:name_end])
        if field is None:
            continue
        try:
            value = float(line.rsplit(" ", 1)[1])
        except (IndexError, ValueError):
            continue
        sums[field] = sums.get(field, 0.0) + value
    return Counters(at=at, tpot_buckets=tuple(sorted(buckets.items())), **sums)


class MetricsSampler:
    """Scrapes `/metrics` on demand (around batches) and when the client is idle (watchdog)."""

    def __init__(
        self, http: httpx.AsyncClient, base_url: str, clock: Clock, interval: float = 5.0
    ) -> None:
        self._http = http
        self._url = f"{base_url}/metrics"
        self._clock = clock
        self.interval = interval
        self.last: Counters | None = None  # what the hang forensics report
        self.last_movement = time.monotonic()
        self.client_progress = time.monotonic()
        self.failures = 0
        self.last_error = ""

    async def scrape(self) -> Counters | None:
        try:
            resp = await self._http.get(self._url, timeout=max(5.0, self.interval))
            resp.raise_for_status()
        except httpx.HTTPError as exc:
            self.failures += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            return None
        snapshot = scan_counters(resp.text, self._clock.now())
        if self.last is None or snapshot.signature() != self.last.signature():
            self.last_movement = time.monotonic()
        self.last = snapshot
        return snapshot

    async def run(self) -> None:
        """Scrape whenever the client has shown no progress for `interval`."""
        while True:
            await asyncio.sleep(self.interval / 2)
            if time.monotonic() - self.client_progress >= self.interval:
                await self.scrape()

    def note(self) -> str:
        last = self.last
        if last is None:
            return f"/metrics unreachable ({self.last_error or 'no scrape yet'})"
        return (
            f"running {last.running}, waiting {last.waiting}, prompt tokens {last.prompt}, "
            f"generation tokens {last.generation}, engine steps {last.steps}"
            + (f"; {self.failures} failed scrapes ({self.last_error})" if self.failures else "")
        )


class Watchdog:
    """Idle time since the last sign of life from either side."""

    def __init__(self, sampler: MetricsSampler, timeout: float) -> None:
        self.sampler = sampler
        self.timeout = timeout

    def touch(self) -> None:
        self.sampler.client_progress = time.monotonic()

    def idle_s(self) -> float:
        return time.monotonic() - max(self.sampler.client_progress, self.sampler.last_movement)

    def hung(self) -> bool:
        return self.idle_s() >= self.timeout
