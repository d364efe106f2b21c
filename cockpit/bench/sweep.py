"""The built-in driver: runs bench points against an OpenAI-compatible endpoint, as events.

Per point, llama-benchy's loop: one warm-up run that is not recorded, then `runs` measured runs,
each a batch of `concurrency` simultaneous streams. At depth > 0 a warm point first sends the
context alone (the context load, reported as `ctx_pp`), then context + prompt; a `--cold` point
sends context + prompt as one request (the old behaviour, kept to reproduce old numbers).

A `MetricsSampler` scrapes `/metrics` before and after each measured batch, feeding the honesty
checks (what the engine prefilled over the batch), and whenever the client idles, feeding the
watchdog: a point that hangs is cancelled with its forensics recorded, retried once, then skipped,
and the sweep goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import httpx

from cockpit.api_key import auth_headers
from cockpit.bench import forensics, honesty
from cockpit.bench.client import (
    CONTEXT_LOAD_USER_MESSAGE,
    Clock,
    chat_body,
    measure_latency,
    stream_chat,
    stream_session,
)
from cockpit.bench.driver import Driver, DriverConfig
from cockpit.bench.events import (
    BenchWarning,
    LatencyMeasured,
    PointFinished,
    PointStarted,
    RequestProgress,
)
from cockpit.bench.judge import RunSeen, StreamReads, judge, reads_of
from cockpit.bench.method import PhaseStats, RequestTiming, phase_stats, stream_rates
from cockpit.bench.models import (
    EngineObservation,
    Flag,
    FlagKind,
    HangRecord,
    PointResult,
    PointSpec,
)
from cockpit.bench.prompts import PromptMaker, adapted_sizes
from cockpit.bench.watch import MetricsSampler, Watchdog
from cockpit.events import OpEvent

if TYPE_CHECKING:
    import aiohttp

PROGRESS_EVERY = 8  # tokens between two RequestProgress events of one stream


class BuiltinDriver(Driver):
    """Runs points with our own streaming client."""

    name = "builtin"
    _maker: PromptMaker  # built when `events()` starts, off the event loop

    def __init__(self, cfg: DriverConfig, lane: str = "", cluster: str = "") -> None:
        super().__init__(cfg, lane, cluster)
        self.clock = Clock(cfg.time_scale)
        self._tasks: set[asyncio.Task[RequestTiming]] = set()
        self._latency = 0.0
        self._delta_user = 0  # chat-template tokens around a user turn (llama-benchy's delta)
        self._delta_context = 0  # around a system turn and the probe turn

    async def events(self) -> AsyncIterator[OpEvent]:
        cfg = self.cfg
        connections = max(p.concurrency for p in cfg.points) + 5
        timeout = httpx.Timeout(cfg.request_timeout_s, connect=30.0)
        # loading the tokenizer and encoding the book takes about a second the first time
        self._maker = await asyncio.to_thread(PromptMaker, cfg.tokenizer_dir, cfg.seed)
        for event in await self._opening():
            yield event
        async with (
            httpx.AsyncClient(timeout=timeout, headers=auth_headers(cfg.api_key)) as http,
            stream_session(connections, cfg.request_timeout_s, cfg.api_key) as session,
            self._watching(http, self.clock) as (sampler, watchdog),
        ):
            try:
                # llama-benchy's start-up warm-up: the first stream of a fresh client pays for
                # lazy imports and connection setup, which must not land in a measured run; its
                # two requests also tell how many tokens the chat template adds (adapt-prompt)
                try:
                    async with asyncio.timeout(cfg.hang_timeout_s):
                        problem = await self._warm_up(session)
                except TimeoutError:
                    problem = f"no answer in {cfg.hang_timeout_s:.0f} s (is the engine hung?)"
                if problem:
                    yield self._ev(BenchWarning, message=f"warm-up request: {problem}")
                for index, spec in enumerate(cfg.points):
                    yield self._ev(PointStarted, point=spec, index=index, total=len(cfg.points))
                    # per point, the median of several round trips: one slow sample measured
                    # once per sweep (93 ms) zeroed pp on 2 of 3 runs
                    self._latency = await measure_latency(http, cfg.base_url, self.clock)
                    yield self._ev(LatencyMeasured, latency_s=self._latency, point=spec)
                    async for event in self._point_with_watchdog(session, spec, sampler, watchdog):
                        yield event
            finally:
                for task in list(self._tasks):
                    task.cancel()
                await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _warm_up(self, session: aiohttp.ClientSession) -> str | None:
        """The warm-up stream and, with adapt-prompt, the template's token overheads."""
        cfg = self.cfg
        text = "Warmup " * 10
        user = await stream_chat(
            session, cfg.base_url, chat_body(cfg.model, "", text, 4), 20, self.clock
        )
        if user.error or not cfg.adapt_prompt:
            return user.error
        system = await stream_chat(
            session, cfg.base_url, chat_body(cfg.model, text, "", 1), 20, self.clock
        )
        if system.error:
            return system.error
        local = self._maker.count(text)
        probe = self._maker.count(CONTEXT_LOAD_USER_MESSAGE)
        if user.usage_prompt_tokens:
            self._delta_user = user.usage_prompt_tokens - local
        if system.usage_prompt_tokens:
            self._delta_context = system.usage_prompt_tokens - local - probe
        return None

    async def _point_with_watchdog(
        self,
        session: aiohttp.ClientSession,
        spec: PointSpec,
        sampler: MetricsSampler,
        watchdog: Watchdog,
    ) -> AsyncIterator[OpEvent]:
        hangs: list[HangRecord] = []
        port = urlsplit(self.cfg.base_url).port or 80
        while True:
            queue: asyncio.Queue[OpEvent] = asyncio.Queue()
            watchdog.touch()
            task = asyncio.create_task(
                self._point(session, spec, sampler, watchdog, queue.put_nowait)
            )
            hung_for = 0.0
            while not task.done():
                getter = asyncio.create_task(queue.get())
                await asyncio.wait({task, getter}, timeout=0.2, return_when="FIRST_COMPLETED")
                if getter.done():
                    yield getter.result()
                    continue
                getter.cancel()
                if watchdog.hung():
                    hung_for = watchdog.idle_s()
                    record = forensics.collect(
                        port,
                        tasks=list(self._tasks),
                        idle_s=hung_for,
                        engine_note=sampler.note(),
                    )
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
                    hangs.append(HangRecord(hung_for, "", record))
                    break
            while not queue.empty():
                yield queue.get_nowait()
            if not hung_for:
                result = task.result()
                if hangs:
                    hangs = [replace(h, action="retried") for h in hangs]
                    result = replace(
                        result,
                        hangs=tuple(hangs),
                        flags=(*result.flags, _hang_flag(spec, hangs, retried=True)),
                    )
                yield self._ev(PointFinished, result=result)
                return
            retry = len(hangs) <= self.cfg.retries
            yield self._ev(
                BenchWarning,
                message=f"{spec.label}: hung for {hung_for:.0f} s (no client progress, no "
                f"engine counter movement); {'retrying once' if retry else 'skipped'}",
                point=spec,
                hang=hangs[-1],
            )
            if not retry:
                hangs = [replace(h, action="skipped") for h in hangs]
                flag = _hang_flag(spec, hangs, retried=False)
                yield self._ev(
                    PointFinished,
                    result=PointResult(spec, None, hangs=tuple(hangs), flags=(flag,)),
                )
                return

    async def _point(
        self,
        session: aiohttp.ClientSession,
        spec: PointSpec,
        sampler: MetricsSampler,
        watchdog: Watchdog,
        emit: Callable[[OpEvent], None],
    ) -> PointResult:
        cfg = self.cfg
        ctx_batches: list[list[RequestTiming]] = []
        inf_batches: list[list[RequestTiming]] = []
        bounds: list[float | None] = []
        observations: list[EngineObservation | None] = []
        pp, depth = spec.pp, spec.depth
        if cfg.adapt_prompt:
            pp, depth = adapted_sizes(spec, self._delta_user, self._delta_context)
        for run in range(cfg.runs + (1 if cfg.warmup else 0)):
            is_warmup = cfg.warmup and run == 0
            pairs = [self._maker.pair(pp, depth, unique=spec.cold) for _ in range(spec.concurrency)]
            if spec.warm_prefix:
                loads = [(context, "") for context, _ in pairs]
                phase = "warmup" if is_warmup else "context"
                batch = await self._batch(session, spec, run, phase, loads, depth, watchdog, emit)
                if not is_warmup:
                    ctx_batches.append(batch)
            expected = pp if spec.warm_prefix else pp + depth
            phase = "warmup" if is_warmup else "inference"
            before = None if is_warmup else await sampler.scrape()
            batch = await self._batch(session, spec, run, phase, pairs, expected, watchdog, emit)
            if is_warmup:
                continue
            after = await sampler.scrape()
            inf_batches.append(batch)
            bounds.append(after.decode_bound_since(before) if after is not None else None)
            observations.append(honesty.observe(batch, before, after))
        runs = [
            RunSeen(tuple(stream_rates(b)), tuple(_reads(r) for r in b if r.error is None), bound)
            for b, bound in zip(inf_batches, bounds, strict=True)
        ]

        def kept(dropped: frozenset[int]) -> PhaseStats:
            batches = [b for i, b in enumerate(inf_batches) if i not in dropped]
            return phase_stats(batches, self._latency, spec.concurrency, dropped=len(dropped))

        verdict = judge(spec, runs, observations, kept)
        inference, engine, flags = verdict.inference, verdict.engine, list(verdict.flags)
        kept_batches = [b for i, b in enumerate(inf_batches) if i not in verdict.dropped]
        if inference.errors:
            first = next(r.error for b in kept_batches for r in b if r.error)
            flags.append(
                Flag(
                    FlagKind.ERRORS,
                    f"{inference.errors} of {inference.requests} requests failed: {first}",
                )
            )
        # the engine's own count of the prompt: a run dropped for its timing still counted it
        usage = [r.usage_prompt_tokens for b in inf_batches for r in b if r.usage_prompt_tokens]
        mean_usage = round(sum(usage) / len(usage)) if usage else None
        flag = honesty.token_mismatch(spec, mean_usage)
        if flag is not None:
            flags.append(flag)
        return PointResult(
            spec,
            inference,
            context=phase_stats(ctx_batches, self._latency, spec.concurrency)
            if ctx_batches
            else None,
            engine=engine,
            flags=tuple(flags),
            usage_prompt_tokens=mean_usage,
            latency_ms=self._latency * 1000,
        )

    async def _batch(
        self,
        session: aiohttp.ClientSession,
        spec: PointSpec,
        run: int,
        phase: str,
        pairs: list[tuple[str, str]],
        expected: int,
        watchdog: Watchdog,
        emit: Callable[[OpEvent], None],
    ) -> list[RequestTiming]:
        """One batch: `concurrency` streams sent together, awaited together."""

        def progress(stream: int) -> Callable[[int], None]:
            def on_tokens(count: int) -> None:
                watchdog.touch()
                if count == 1 or count % PROGRESS_EVERY == 0:
                    emit(self._progress(spec, run, stream, phase, count))

            return on_tokens

        bodies = [chat_body(self.cfg.model, c, p, spec.tg) for c, p in pairs]
        watchdog.touch()
        tasks = [
            asyncio.create_task(
                stream_chat(session, self.cfg.base_url, body, expected, self.clock, progress(i))
            )
            for i, body in enumerate(bodies)
        ]
        self._tasks.update(tasks)
        try:
            results = await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
                self._tasks.discard(task)
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(*tasks, return_exceptions=True)
        watchdog.touch()
        for stream, timing in enumerate(results):
            emit(self._progress(spec, run, stream, phase, timing.total_tokens, done=True))
        return list(results)

    def _progress(
        self, spec: PointSpec, run: int, stream: int, phase: str, tokens: int, done: bool = False
    ) -> OpEvent:
        return self._ev(
            RequestProgress,
            point=spec,
            run=run,
            stream=stream,
            phase=phase,
            tokens=tokens,
            done=done,
        )


def _reads(timing: RequestTiming) -> StreamReads:
    """How a stream's tokens arrived: one stamp per socket read, a chunk's token ids (else 1)."""
    counts = [1 if n is None else n for n in timing.chunk_token_ids]
    return reads_of(list(zip(timing.chunk_times, counts, strict=True)))


def _hang_flag(spec: PointSpec, hangs: list[HangRecord], retried: bool) -> Flag:
    outcome = "the retry completed" if retried else "skipped after a retry"
    return Flag(
        FlagKind.HUNG,
        f"{spec.label} hung {len(hangs)}× (no client progress and no engine counter movement "
        f"for {hangs[0].after_s:.0f} s); {outcome}; forensics recorded in the report",
        "check the client host (stuck tool, buffered output) and the engine (/health, a tiny "
        "chat: `cockpit probe`)",
    )
