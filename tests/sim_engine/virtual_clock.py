"""The simulated engine's scheduler driven in virtual time, scored by the bench's own method.

The requests have llama-benchy 0.4.0's shapes (the seed's figures are llama-benchy's): latency
(`--latency-mode generation`) is the time to the first token of three tiny 1-token chats; a warm
point (prefix caching, depth > 0) loads its context first (context + one token), then sends context
+ prompt; a cold one sends context + prompt as one request; every run uses fresh text. Requests of
one phase arrive together and nothing else runs on the engine. Each request is recorded as the
`RequestTiming` a streaming client records, and `cockpit.bench.method.phase_stats` scores them:
the calibration is measured the way the product measures a lane.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cockpit.bench.method import PhaseStats, RequestTiming, Stat, phase_stats
from cockpit_sim.engine.calibration import LaneCalibration
from cockpit_sim.engine.scheduler import Request, Scheduler, SchedulerConfig, StepResult

_TEMPLATE_OPEN = (100_001, 100_002, 100_003)
_TEMPLATE_TURN = (100_004, 100_005, 100_006)
_TEMPLATE_CLOSE = (100_004, 100_007, 100_008)
HELLO_TOKENS = 12


class VirtualEngine:
    """A scheduler and a virtual clock; `serve` runs requests that arrive together to completion."""

    def __init__(
        self,
        cal: LaneCalibration,
        config: SchedulerConfig,
        on_step: Callable[[StepResult, float], None] | None = None,
    ) -> None:
        self.scheduler = Scheduler(cal, config)
        self.clock = 0.0
        self.on_step = on_step
        self._ids = itertools.count()
        self._fresh = itertools.count(start=1_000_000, step=10_000_000)

    def fresh_text(self, tokens: int) -> list[int]:
        """Token ids no other request shares (llama-benchy picks a random slice of its book)."""
        base = next(self._fresh)
        return list(range(base, base + tokens))

    def serve(
        self, prompts: Sequence[Sequence[int]], max_tokens: int, expected: int
    ) -> list[RequestTiming]:
        """Each prompt streamed to completion as a client sees it (engine seconds); `expected`:
        the prompt tokens the client means to send (the prompt, less a context already cached)."""
        timings: dict[str, RequestTiming] = {}
        for prompt in prompts:
            rid = f"req-{next(self._ids)}"
            self.scheduler.add(Request(rid, prompt, max_tokens, self.clock, ignore_eos=True))
            timings[rid] = RequestTiming(self.clock, expected, usage_prompt_tokens=len(prompt))
        pending = set(timings)
        while pending:
            result = self.scheduler.step(self.clock)
            if result.duration <= 0:
                raise RuntimeError("scheduler stalled: KV pool too small for the request")
            self.clock += result.duration
            if self.on_step is not None:
                self.on_step(result, self.clock)
            for event in result.tokens:
                timing = timings.get(event.request_id)
                if timing is not None:
                    if timing.first_response is None:
                        timing.first_response = self.clock
                    timing.content_chunk(self.clock, event.count)
            for done in result.finished:
                if done.request_id in pending:
                    timings[done.request_id].finalize(self.clock)
                    pending.discard(done.request_id)
        return list(timings.values())


def chat_prompt(context: Sequence[int], user: Sequence[int]) -> list[int]:
    """Token ids of a system(context) + user turn rendered by a chat template."""
    ids = list(_TEMPLATE_OPEN)
    if context:
        ids += [*context, *_TEMPLATE_TURN]
    return [*ids, *user, *_TEMPLATE_CLOSE]


def _mean(stat: Stat | None) -> float:
    assert stat is not None, "the bench's method found nothing to measure"
    return stat.mean


def measure_latency(engine: VirtualEngine) -> float:
    """llama-benchy `--latency-mode generation`: three tiny chats, mean time to the first token."""
    hellos = [
        engine.serve([chat_prompt([], engine.fresh_text(HELLO_TOKENS))], 1, HELLO_TOKENS)
        for _ in range(3)
    ]
    return _mean(phase_stats(hellos, 0.0, 1).e2e_ttft_ms) / 1000


@dataclass(frozen=True)
class Point:
    """One point's figures as the bench reports them: means over the runs."""

    stats: PhaseStats

    @property
    def pp_tps(self) -> float:
        return _mean(self.stats.pp)

    @property
    def tg_tps(self) -> float:
        return _mean(self.stats.tg)

    @property
    def ttfr_s(self) -> float:
        return _mean(self.stats.ttfr_ms) / 1000


def run_point(
    engine: VirtualEngine,
    *,
    pp: int,
    tg: int,
    depth: int,
    concurrency: int,
    prefix_caching: bool,
    latency: float,
    runs: int = 3,
) -> Point:
    """One (pp, tg, depth, concurrency) test of llama-benchy, `runs` runs, no warmup run."""
    warm = prefix_caching and depth > 0
    batches: list[list[RequestTiming]] = []
    for _ in range(runs):
        pairs = [(engine.fresh_text(depth), engine.fresh_text(pp)) for _ in range(concurrency)]
        if warm:
            engine.serve([chat_prompt(ctx, engine.fresh_text(1)) for ctx, _ in pairs], tg, depth)
        prompts = [chat_prompt(ctx, user) for ctx, user in pairs]
        batches.append(engine.serve(prompts, tg, pp if warm else pp + depth))
    return Point(phase_stats(batches, latency, concurrency))
