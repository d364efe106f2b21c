"""What the two bench drivers share: one config, the events' lane, the sampler and watchdog.

The built-in driver (`sweep.BuiltinDriver`) and llama-benchy (`benchy.BenchyDriver`) run the
same points with the same watchdog and yield the same events; only how requests are sent differs.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from cockpit.bench.client import Clock
from cockpit.bench.environment import client_facts
from cockpit.bench.events import OP, ClientInfo
from cockpit.bench.models import PointSpec
from cockpit.bench.watch import MetricsSampler, Watchdog
from cockpit.events import OpEvent, Planned


@dataclass(frozen=True)
class DriverConfig:
    base_url: str
    model: str
    points: tuple[PointSpec, ...]
    tokenizer_dir: Path
    runs: int = 3
    warmup: bool = True
    time_scale: float = 1.0
    hang_timeout_s: float = 300.0
    metrics_interval_s: float = 5.0  # the watchdog's scrape interval while the client idles
    retries: int = 1
    adapt_prompt: bool = True  # llama-benchy's --adapt-prompt (its default), on both drivers
    api_key: str | None = field(default=None, repr=False)  # sent as a Bearer token
    # built-in driver only
    seed: int | None = None  # None: fresh text every bench (the engine's prefix cache persists)
    request_timeout_s: float = 3600.0
    # llama-benchy only
    exe: tuple[str, ...] = ("llama-benchy",)
    latency_mode: str = "api"


class Driver:
    """A driver's config and lane; its `events()` is what the bench operation forwards."""

    def __init__(self, cfg: DriverConfig, lane: str = "", cluster: str = "") -> None:
        self.cfg = cfg
        self.lane, self.cluster = lane, cluster

    def _ev(self, cls: type[OpEvent], **kw: object) -> OpEvent:
        return cls(op=OP, lane=self.lane, cluster=self.cluster, **kw)  # type: ignore[arg-type]

    async def _opening(self) -> tuple[OpEvent, OpEvent]:
        """The plan (one step a point) and where the client runs, before any request.

        The client facts resolve a host name and run `ip route`: off the (TUI's) event loop.
        """
        cfg = self.cfg
        facts = await asyncio.to_thread(client_facts, cfg.base_url)
        return (
            self._ev(Planned, steps=tuple(p.label for p in cfg.points), summary=cfg.base_url),
            self._ev(ClientInfo, **facts),
        )

    @contextlib.asynccontextmanager
    async def _watching(
        self, http: httpx.AsyncClient, clock: Clock
    ) -> AsyncIterator[tuple[MetricsSampler, Watchdog]]:
        """A sampler scraping `/metrics` in the background, and the watchdog reading it."""
        cfg = self.cfg
        interval = min(cfg.metrics_interval_s, cfg.hang_timeout_s / 4)
        sampler = MetricsSampler(http, cfg.base_url, clock, interval)
        watchdog = Watchdog(sampler, cfg.hang_timeout_s)
        sampling = asyncio.create_task(sampler.run())
        try:
            yield sampler, watchdog
        finally:
            sampling.cancel()
            await asyncio.gather(sampling, return_exceptions=True)
