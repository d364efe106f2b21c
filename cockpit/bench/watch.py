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
import re
import time
from dataclasses import dataclass

import httpx

from cockpit.bench.client import Clock
from cockpit.bench.method import fastest_decode
from cockpit.telemetry.histogram import Histogram

_NAMES = {
    "vllm:prompt_tokens_total": "prompt",
    "vllm:prompt_tokens_cached_total": "cached",
    "vllm:generation_tokens_total": "generation",
    "vllm:num_requests_running": "running",
    "vllm:num_requests_waiting": "waiting",
    "vllm:request_success_total": "finished",
    "vllm:e2e_request_latency_seconds_count": "e2e",
    "vllm:iteration_tokens_total_count": "steps",
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
    tpot: Histogram | None = None  # the engine's own time per output token, one per request

    @property
    def computed_prompt(self) -> float | None:
        """Prompt tokens the engine actually prefilled (prefix-cache hits excluded)."""
        if self.prompt is None:
            return None
        return self.prompt - (self.cached or 0.0)

    def decode_bound_since(self, before: Counters | None) -> float | None:
        """The fastest per-stream decode rate the engine allows for the requests finished since
        `before`, None when it does not say."""
        if before is None or self.tpot is None or before.tpot is None:
            return None
        return fastest_decode(self.tpot.since(before.tpot))

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


_TPOT = "vllm:request_time_per_output_token_seconds"
_TPOT_PARTS = frozenset({"_sum", "_count", "_bucket"})
_LE = re.compile(r'le="([^"]+)"')


def _bound(line: str) -> float | None:
    """A bucket line's `le` (+Inf included), None when absent or malformed."""
    match = _LE.search(line)
    try:
        return float(match.group(1)) if match else None
    except ValueError:
        return None


def scan_counters(text: str, at: float) -> Counters:
    """The counters of a Prometheus exposition, by line scan (one histogram, no full parse)."""
    sums: dict[str, float] = {}
    tpot: dict[str, float] = {}
    buckets: dict[float, float] = {}
    for line in text.splitlines():
        if not line.startswith("vllm:"):
            continue
        name_end = min((i for i in (line.find("{"), line.find(" ")) if i > 0), default=-1)
        if name_end < 0:
            continue
        name = line[:name_end]
        field = _NAMES.get(name)
        part = name.removeprefix(_TPOT) if name.startswith(_TPOT) else ""
        if field is None and part not in _TPOT_PARTS:
            continue
        try:
            value = float(line.rsplit(" ", 1)[1])
        except (IndexError, ValueError):
            continue
        bound = _bound(line) if part == "_bucket" else None
        if field is not None:
            sums[field] = sums.get(field, 0.0) + value
        elif bound is not None:
            buckets[bound] = buckets.get(bound, 0.0) + value
        elif part != "_bucket":
            tpot[part] = tpot.get(part, 0.0) + value
    histogram = None
    if "_sum" in tpot and "_count" in tpot:
        histogram = Histogram(tuple(sorted(buckets.items())), tpot["_count"], tpot["_sum"])
    return Counters(at=at, tpot=histogram, **sums)


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
