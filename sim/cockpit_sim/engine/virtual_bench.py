"""llama-benchy's method run against the scheduler in virtual time: calibration in milliseconds.

Mirrors llama-benchy 0.4.0 (`client.py`, `results.py`, `runner.py`):

- latency (mode "generation"): mean time to the first streamed line of three 1-token "hello" chats;
- pp t/s = prompt tokens / (time to first response − latency), per request; for concurrency > 1 the
  batch figure is the sum of prompt tokens / (last first-token − first start);
- tg t/s = tokens after the first / (last − first token) per request; token timestamps inside a
  multi-token chunk are spread evenly since the previous token, as llama-benchy does with
  `token_ids`; for concurrency > 1 the batch figure (`tg_throughput`, what tool-eval-bench shows)
  is all tokens after each request's first / (last token of any − first token of any);
- warm (`--enable-prefix-caching`, depth > 0): a context-load request (context + "."), then
  context + prompt; cold: context + prompt as one request. Every run uses fresh text.

Requests of one phase arrive together; nothing else runs on the engine.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from cockpit_sim.engine.calibration import LaneCalibration
from cockpit_sim.engine.scheduler import Request, Scheduler, SchedulerConfig, StepResult

_TEMPLATE_OPEN = (100_001, 100_002, 100_003)
_TEMPLATE_TURN = (100_004, 100_005, 100_006)
_TEMPLATE_CLOSE = (100_004, 100_007, 100_008)
HELLO_TOKENS = 12


@dataclass
class Timeline:
    """Client-side view of one streamed request (times in engine seconds)."""

    start: float
    first_token: float | None = None
    token_times: list[float] = field(default_factory=list)

    def add_chunk(self, at: float, count: int) -> None:
        if self.first_token is None:
            self.first_token = at
        if count == 1:
            self.token_times.append(at)
            return
        last = self.token_times[-1] if self.token_times else self.first_token
        for i in range(count):
            self.token_times.append(last + (at - last) * (i + 1) / count)

    @property
    def decode_tokens(self) -> int:
        if len(self.token_times) < 2:
            return 0
        return sum(1 for t in self.token_times if t > self.token_times[0])


@dataclass(frozen=True)
class BenchPoint:
    """One llama-benchy test row: means over the runs (t/s, seconds)."""

    pp_tps: float
    tg_tps: float
    tg_req_tps: float
    ttfr_s: float
    runs: int


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

    def serve(self, prompts: Sequence[Sequence[int]], max_tokens: int) -> list[Timeline]:
        timelines: dict[str, Timeline] = {}
        for prompt in prompts:
            rid = f"req-{next(self._ids)}"
            self.scheduler.add(Request(rid, prompt, max_tokens, self.clock, ignore_eos=True))
            timelines[rid] = Timeline(self.clock)
        pending = set(timelines)
        while pending:
            result = self.scheduler.step(self.clock)
            if result.duration <= 0:
                raise RuntimeError("scheduler stalled: KV pool too small for the request")
            self.clock += result.duration
            if self.on_step is not None:
                self.on_step(result, self.clock)
            for event in result.tokens:
                if event.request_id in timelines:
                    timelines[event.request_id].add_chunk(self.clock, event.count)
            pending -= {r.request_id for r in result.finished}
        return list(timelines.values())


def chat_prompt(context: Sequence[int], user: Sequence[int]) -> list[int]:
    """Token ids of a system(context) + user turn rendered by a chat template."""
    ids = list(_TEMPLATE_OPEN)
    if context:
        ids += [*context, *_TEMPLATE_TURN]
    return [*ids, *user, *_TEMPLATE_CLOSE]


def measure_latency(engine: VirtualEngine) -> float:
    """llama-benchy `--latency-mode generation`: three tiny streamed chats, time to first line."""
    samples = []
    for _ in range(3):
        (timeline,) = engine.serve([chat_prompt([], engine.fresh_text(HELLO_TOKENS))], 1)
        assert timeline.first_token is not None
        samples.append(timeline.first_token - timeline.start)
    return statistics.fmean(samples)


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
) -> BenchPoint:
    """One (pp, tg, depth, concurrency) test of llama-benchy, `runs` runs, no warmup run."""
    pp_values: list[float] = []
    tg_values: list[float] = []
    tg_req_values: list[float] = []
    ttfr_values: list[float] = []
    warm = prefix_caching and depth > 0
    for _ in range(runs):
        pairs = [(engine.fresh_text(depth), engine.fresh_text(pp)) for _ in range(concurrency)]
        if warm:
            engine.serve([chat_prompt(ctx, engine.fresh_text(1)) for ctx, _ in pairs], tg)
        batch = engine.serve([chat_prompt(ctx, user) for ctx, user in pairs], tg)
        expected = pp if warm else pp + depth
        req_pp: list[float] = []
        for t in batch:
            assert t.first_token is not None
            ttfr_values.append(t.first_token - t.start)
            est_ppt = max(0.0, t.first_token - t.start - latency)
            if est_ppt > 0:
                req_pp.append(expected / est_ppt)
            span = t.token_times[-1] - t.token_times[0]
            if t.decode_tokens and span > 0:
                tg_req_values.append(t.decode_tokens / span)
        if concurrency == 1:
            pp_values += req_pp
            tg_values = tg_req_values
            continue
        start = min(t.start for t in batch)
        firsts = [t.first_token for t in batch if t.first_token is not None]
        pp_values.append(expected * len(batch) / (max(firsts) - start))
        window = max(t.token_times[-1] for t in batch) - min(firsts)
        tg_values.append(sum(t.decode_tokens for t in batch) / window)
    return BenchPoint(
        pp_tps=statistics.fmean(pp_values),
        tg_tps=statistics.fmean(tg_values),
        tg_req_tps=statistics.fmean(tg_req_values),
        ttfr_s=statistics.fmean(ttfr_values),
        runs=runs,
    )
