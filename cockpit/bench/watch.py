"""Background `/metrics` sampling during a point, and the hang watchdog built on it.

The sampler scrapes the engine every `interval` wall seconds, stamping each snapshot with the
bench clock (engine seconds) so the honesty checks can cut a point's decode window out of it. The
watchdog declares a point hung when neither our client made progress (a request sent, a byte
received) nor any engine request counter moved for `timeout` wall seconds: the seed's §4.1 client
sat idle for 30+ minutes with zero POSTs reaching a healthy engine, and nobody knew.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

import httpx

from cockpit.bench.client import Clock
from cockpit.telemetry.metrics import EngineMetrics, parse_metrics

MAX_SAMPLES = 20_000


def activity_signature(m: EngineMetrics) -> tuple[float | None, ...]:
    """The counters and gauges whose change means the engine received or served requests."""
    return (
        m.prompt_tokens,
        m.generation_tokens,
        m.requests_finished,
        m.requests_running,
        m.requests_waiting,
        m.e2e.count if m.e2e else None,
        m.ttft.count if m.ttft else None,
    )


class MetricsSampler:
    """Scrapes `/metrics` in the background; keeps a bounded list of snapshots."""

    def __init__(
        self, http: httpx.AsyncClient, base_url: str, clock: Clock, interval: float = 0.1
    ) -> None:
        self._http = http
        self._url = f"{base_url}/metrics"
        self._clock = clock
        self.interval = interval
        self.samples: deque[EngineMetrics] = deque(maxlen=MAX_SAMPLES)
        self.last_movement = time.monotonic()
        self.failures = 0
        self.last_error = ""
        self._signature: tuple[float | None, ...] | None = None

    async def scrape(self) -> EngineMetrics | None:
        try:
            resp = await self._http.get(self._url, timeout=max(2.0, 10 * self.interval))
            resp.raise_for_status()
        except httpx.HTTPError as exc:
            self.failures += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            return None
        snapshot = parse_metrics(resp.text, at=self._clock.now())
        self.samples.append(snapshot)
        signature = activity_signature(snapshot)
        if signature != self._signature:
            self._signature = signature
            self.last_movement = time.monotonic()
        return snapshot

    async def run(self) -> None:
        while True:
            await self.scrape()
            await asyncio.sleep(self.interval)

    def window(self, start: float, end: float) -> list[EngineMetrics]:
        return [s for s in self.samples if start <= s.at <= end]

    def note(self) -> str:
        last = self.samples[-1] if self.samples else None
        if last is None:
            return f"/metrics unreachable ({self.last_error or 'no scrape yet'})"
        return (
            f"running {last.requests_running}, waiting {last.requests_waiting}, prompt tokens "
            f"{last.prompt_tokens}, generation tokens {last.generation_tokens}"
            + (f"; {self.failures} failed scrapes ({self.last_error})" if self.failures else "")
        )


class Watchdog:
    """Idle time since the last sign of life from either side."""

    def __init__(self, sampler: MetricsSampler, timeout: float) -> None:
        self.sampler = sampler
        self.timeout = timeout
        self.client_progress = time.monotonic()

    def touch(self) -> None:
        self.client_progress = time.monotonic()

    def idle_s(self) -> float:
        return time.monotonic() - max(self.client_progress, self.sampler.last_movement)

    def hung(self) -> bool:
        return self.idle_s() >= self.timeout
