"""Per running lane: its engine's last scrapes and series, folded into the `EngineView` the KV and
Engine panes show (rates from the last two scrapes, latencies and finish reasons over a window)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from cockpit.config.models import Recipe
from cockpit.telemetry.boot import BootState
from cockpit.telemetry.metrics import EngineMetrics, kv_pool_gib, window
from cockpit.telemetry.slo import Slo, goodput
from cockpit.tui.state.nodes import HISTORY
from cockpit.tui.state.stall import is_decode_stall
from cockpit.tui.state.views import EngineView

WINDOW_S = 60.0
"""Latency quantiles, finish reasons, goodput and recent preemptions cover this much of the past:
a 2 s scrape window often holds no finished request at all."""
WINDOW_SCRAPES = 64  # kept per engine for that window (fewer when scraped faster than 1 s)


@dataclass
class EngineRecord:
    prev: EngineMetrics | None = None
    cur: EngineMetrics | None = None
    kv: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    gen: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    prompt: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    busy_gen: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    recent: deque[EngineMetrics] = field(default_factory=lambda: deque(maxlen=WINDOW_SCRAPES))
    backlog_since: float | None = None  # since when more requests wait than run
    bench_at: float | None = None  # the last scrape while a bench of the lane ran
    view: EngineView | None = None


def fold_scrape(
    eng: EngineRecord,
    key: str,
    m: EngineMetrics,
    boot: BootState,
    recipe: Recipe | None,
    slo: Slo,
    benching: bool,
) -> EngineView:
    """Rates from the last two scrapes; quantiles, finish reasons, goodput and preemptions
    over the scrapes of the last WINDOW_S (the advisor's hints are the store's to add).
    `boot`: the head's boot log, for the pool sizes /metrics may lack; `benching`: a bench of
    the lane runs."""
    eng.prev, eng.cur = eng.cur, m
    win = window(eng.prev, m) if eng.prev is not None else None
    eng.recent.append(m)
    while eng.recent[0].at < m.at - WINDOW_S:
        eng.recent.popleft()
    first = eng.recent[0]
    span = window(first, m) if first is not m else None
    gen = win.generation_tps if win else None
    stalled = False
    if gen is not None:
        stalled = is_decode_stall(tuple(eng.busy_gen), gen, m.requests_running)
        eng.gen.append(gen)
        if m.requests_running:
            eng.busy_gen.append(gen)
    if win and win.prompt_tps is not None:
        eng.prompt.append(win.prompt_tps)
    if m.kv_cache_usage is not None:
        eng.kv.append(m.kv_cache_usage)
    backlog = (m.requests_waiting or 0.0) > (m.requests_running or 0.0)
    if not backlog:
        eng.backlog_since = None
    elif eng.backlog_since is None:
        eng.backlog_since = m.at
    if benching:
        eng.bench_at = m.at
    pool_gib = kv_pool_gib(m, recipe.model.kv_bytes_per_token if recipe else None)
    reasons = span.finish_reasons.items() if span else ()
    finished = tuple(sorted(((r, n) for r, n in reasons if n > 0), key=lambda rn: -rn[1]))
    return EngineView(
        lane_key=key,
        at=m.at,
        running=m.requests_running,
        waiting=m.requests_waiting,
        kv_usage=m.kv_cache_usage,
        pool_tokens=m.pool_tokens or boot.kv_pool_tokens,
        pool_gib=pool_gib if pool_gib is not None else boot.kv_cache_gib,
        prefix_hit_rate=win.prefix_hit_rate if win else None,
        preemptions_total=m.preemptions,
        prompt_tps=win.prompt_tps if win else None,
        gen_tps=gen,
        spec_acceptance=win.spec_acceptance_rate if win else None,
        kv_history=tuple(eng.kv),
        gen_history=tuple(eng.gen),
        prompt_history=tuple(eng.prompt),
        stalled=stalled,
        window_s=span.seconds if span else None,
        ttft=span.ttft if span else None,
        tpot=span.tpot if span else None,
        itl=span.itl if span else None,
        queue=span.queue if span else None,
        prefill=span.prefill if span else None,
        decode=span.decode if span else None,
        e2e=span.e2e if span else None,
        finished=finished,
        finished_per_s=span.requests_per_s if span else None,
        goodput=goodput(first, m, slo) if span else None,
        slo=slo,
        preemptions_recent=span.preemptions if span else None,
        backlog_s=m.at - eng.backlog_since if eng.backlog_since is not None else None,
        prefix_caching=m.prefix_caching,
    )


def bench_in_window(eng: EngineRecord, at: float) -> bool:
    """A bench of the lane ran within the window the figures at `at` cover."""
    return eng.bench_at is not None and at - eng.bench_at <= WINDOW_S
