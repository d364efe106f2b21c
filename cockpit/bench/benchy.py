"""`--driver llama-benchy`: the operators' own client (PyPI 0.4.0) run point by point.

Each point is one llama-benchy process with the flags the seed's fix needs: at depth > 0
`--enable-prefix-caching` unless `--cold` (then `--no-cache`, tool-eval-bench's choice), the
engine's tokenizer (`--tokenizer DIR`), and, offline, our own book served on loopback
(`--book-url`). Its `--emit-progress -` JSON lines become our events live; its `--save-result`
JSON becomes the point's result. The watchdog and the honesty checks apply as for the built-in
driver: the progress events carry wall timestamps, from which each run's decode window is cut.

One process per group of points sharing pp/tg/mode (its startup costs seconds); a hung process
is interrupted (llama-benchy saves partial results on SIGINT) and the rest is retried once.
The process itself is `benchy_process`, its progress lines `benchy_progress` and its result
JSON `benchy_result`: this module is what the driver makes of them.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from cockpit.api_key import auth_headers
from cockpit.bench import forensics, honesty
from cockpit.bench.benchy_process import (
    KEY_ENV,
    benchy_argv,
    groups,
    interrupt,
    progress_events,
    serve_book,
    stop,
)
from cockpit.bench.benchy_progress import (
    ProgressTracker,
    decode_windows,
    seen_stream_rates,
    stream_reads,
)
from cockpit.bench.benchy_result import drop_runs, read_result, run_stream_rates
from cockpit.bench.client import Clock
from cockpit.bench.driver import Driver
from cockpit.bench.events import (
    BenchWarning,
    LatencyMeasured,
    PointFinished,
    PointStarted,
    RequestProgress,
)
from cockpit.bench.judge import RunSeen, judge
from cockpit.bench.method import PhaseStats
from cockpit.bench.models import (
    EngineObservation,
    Flag,
    FlagKind,
    HangRecord,
    PointResult,
    PointSpec,
)
from cockpit.bench.watch import Counters, MetricsSampler, Watchdog
from cockpit.errors import InputError
from cockpit.events import OpEvent


class _WallClock(Clock):
    """`time.time()`: the clock of llama-benchy's progress events."""

    def now(self) -> float:
        return time.time()


class BenchyDriver(Driver):
    """Runs the points with llama-benchy; yields the same events as the built-in driver.

    One process per group of points (its startup costs seconds). On a hang the process gets
    SIGINT, on which llama-benchy saves its partial results; the hung point is retried once in
    a new process with the points still to do, then skipped.
    """

    name = "llama-benchy 0.4.0"

    async def events(self) -> AsyncIterator[OpEvent]:
        cfg = self.cfg
        for event in await self._opening():
            yield event
        with tempfile.TemporaryDirectory(prefix="cockpit-benchy-") as tmp:
            runner, book_url = await serve_book()
            try:
                async with (
                    httpx.AsyncClient(timeout=30.0, headers=auth_headers(cfg.api_key)) as http,
                    self._watching(http, _WallClock()) as (sampler, watchdog),
                ):
                    for group in groups(cfg.points):
                        async for event in self._group(
                            group, Path(tmp), book_url, sampler, watchdog
                        ):
                            yield event
            finally:
                await runner.cleanup()

    async def _group(
        self,
        group: list[PointSpec],
        tmp: Path,
        book_url: str,
        sampler: MetricsSampler,
        watchdog: Watchdog,
    ) -> AsyncIterator[OpEvent]:
        remaining = list(group)
        hangs: dict[PointSpec, list[HangRecord]] = {}
        attempt = 0
        while remaining:
            attempt += 1
            result_file = tmp / f"result-{attempt}-{id(group)}.json"
            trackers: dict[PointSpec, ProgressTracker] = {}
            state = _ProcessState()
            async for event in self._process(
                remaining, result_file, book_url, sampler, watchdog, trackers, state
            ):
                yield event
            found = read_result(result_file, self.cfg.time_scale, self.cfg.runs)
            current = state.current
            for spec in list(remaining):
                if (spec.depth, spec.concurrency, spec.pp, spec.tg) not in found:
                    continue
                inference, context = found[(spec.depth, spec.concurrency, spec.pp, spec.tg)]
                tracker = trackers.get(spec, ProgressTracker(spec))
                result = self._result(spec, inference, context, tracker, hangs.get(spec, []), state)
                yield self._ev(PointFinished, result=result)
                remaining.remove(spec)
            if state.hung_for and current is not None and current in remaining:
                record = HangRecord(state.hung_for, "", state.forensics)
                hangs.setdefault(current, []).append(record)
                retry = len(hangs[current]) <= self.cfg.retries
                yield self._ev(
                    BenchWarning,
                    message=f"{current.label}: llama-benchy hung for {state.hung_for:.0f} s "
                    "(no progress line, no engine counter movement); "
                    + ("retrying once" if retry else "skipped"),
                    point=current,
                    hang=record,
                )
                if not retry:
                    records = tuple(replace(h, action="skipped") for h in hangs[current])
                    flag = Flag(
                        FlagKind.HUNG,
                        f"{current.label}: llama-benchy hung {len(records)}×; skipped after "
                        "a retry; forensics recorded in the report",
                        "check the client host and the engine (`cockpit probe`)",
                    )
                    yield self._ev(
                        PointFinished,
                        result=PointResult(current, None, hangs=records, flags=(flag,)),
                    )
                    remaining.remove(current)
                continue
            for spec in remaining:  # the process ended without them: nothing to retry
                tail = " | ".join(state.stderr_tail[-3:])
                flag = Flag(FlagKind.ERRORS, f"llama-benchy gave no result for it: {tail}")
                yield self._ev(PointFinished, result=PointResult(spec, None, flags=(flag,)))
            remaining = []

    async def _process(
        self,
        points: list[PointSpec],
        result_file: Path,
        book_url: str,
        sampler: MetricsSampler,
        watchdog: Watchdog,
        trackers: dict[PointSpec, ProgressTracker],
        state: _ProcessState,
    ) -> AsyncIterator[OpEvent]:
        """Run one llama-benchy process and relay its progress until it ends or hangs."""
        argv = benchy_argv(self.cfg, points, book_url, result_file)
        env = {**os.environ, "HOME": str(result_file.parent)}  # its book cache: our temp dir
        if self.cfg.api_key:
            env[KEY_ENV] = self.cfg.api_key  # never its argv (`key_launcher`)
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        by_key = {(p.depth, p.concurrency): p for p in points}
        by_request: dict[int, ProgressTracker] = {}
        index = {p: i for i, p in enumerate(self.cfg.points)}
        # the engine's own decode rate per point and per run, from its counters at their
        # boundaries (its histograms count a request when it finishes, so a scrape as the next
        # run starts holds exactly the previous run's requests)
        before = run_before = state.first = await sampler.scrape()
        try:
            watchdog.touch()
            async for event in progress_events(proc, watchdog, state.stderr_tail):
                if event.get("type") == "latency_measured":
                    scaled = float(event.get("latency_s", 0.0)) * self.cfg.time_scale
                    state.latency_s = scaled
                    yield self._ev(LatencyMeasured, latency_s=scaled, mode=self.cfg.latency_mode)
                    continue
                rid = event.get("request_id")
                if event.get("type") == "request_start":
                    key = (int(event.get("context_size", 0)), int(event.get("concurrency", 1)))
                    spec = by_key.get(key)
                    if spec is None:
                        continue
                    run = (spec, int(event.get("run_index", 0)))
                    if run != state.run:  # a new run (of a new point, maybe) begins
                        after = await sampler.scrape()
                        if state.run is not None and after is not None:
                            state.run_bounds[state.run] = after.decode_bound_since(run_before)
                        run_before, state.run = after, run
                        if spec not in trackers:
                            if state.current is not None and after is not None:
                                state.bounds[state.current] = after.decode_bound_since(before)
                            before = after
                            state.first = state.first or after
                            trackers[spec] = ProgressTracker(spec)
                            state.current = spec
                            yield self._ev(
                                PointStarted,
                                point=spec,
                                index=index.get(spec, 0),
                                total=len(self.cfg.points),
                            )
                    if isinstance(rid, int):
                        by_request[rid] = trackers[spec]
                tracker = by_request.get(rid) if isinstance(rid, int) else None
                moved = tracker.feed(event) if tracker is not None else None
                if tracker is not None and moved is not None:
                    run, stream, phase, tokens, done = moved
                    yield self._ev(
                        RequestProgress,
                        point=tracker.spec,
                        run=run,
                        stream=stream,
                        phase=phase,
                        tokens=tokens,
                        done=done,
                    )
            if state.current is not None and not watchdog.hung():
                after = await sampler.scrape()
                if after is not None:
                    state.bounds[state.current] = after.decode_bound_since(before)
                    state.overall = after.decode_bound_since(state.first)
                    if state.run is not None:
                        state.run_bounds[state.run] = after.decode_bound_since(run_before)
            if watchdog.hung():
                state.hung_for = watchdog.idle_s()
                # `py-spy dump` may take seconds: not on the (TUI's) event loop
                state.forensics = await asyncio.to_thread(
                    forensics.collect,
                    urlsplit(self.cfg.base_url).port or 80,
                    pid=proc.pid,
                    idle_s=state.hung_for,
                    engine_note=sampler.note(),
                )
                await interrupt(proc)  # llama-benchy saves its partial results on SIGINT
        finally:
            await stop(proc)

    def _result(
        self,
        spec: PointSpec,
        inference: PhaseStats | None,
        context: PhaseStats | None,
        tracker: ProgressTracker,
        hangs: list[HangRecord],
        state: _ProcessState,
    ) -> PointResult:
        scale, runs = self.cfg.time_scale, self.cfg.runs
        observations = [
            EngineObservation(window_s=(w[0][1] - w[0][0]) * scale, stagger_s=w[1] * scale)
            if w is not None
            else None
            for w in decode_windows(tracker)
        ]
        flags: list[Flag] = []
        engine = honesty.worst([o for o in observations if o is not None])
        if inference is not None:
            measured = inference
            verdict = judge(
                spec,
                _runs_seen(inference, tracker, state.held_to(spec, runs), scale),
                observations if len(observations) == runs else [],
                lambda dropped: drop_runs(measured, set(dropped), runs),
            )
            inference, engine, flags = verdict.inference, verdict.engine, list(verdict.flags)
        records = tuple(replace(h, action="retried") for h in hangs)
        if records:
            flags.append(
                Flag(FlagKind.HUNG, f"{spec.label}: llama-benchy hung once; the retry completed")
            )
        latency_ms = state.latency_s * 1000 if state.latency_s is not None else None
        return PointResult(
            spec,
            inference,
            context=context,
            engine=engine,
            flags=tuple(flags),
            hangs=records,
            latency_ms=latency_ms,
        )


def _runs_seen(
    inference: PhaseStats, tracker: ProgressTracker, bounds: list[float | None], scale: float
) -> list[RunSeen]:
    """Each run as llama-benchy's result and its progress lines show it (wall rates: divided by
    the simulator's `scale`, as its result's are), held to its bound."""
    runs = len(bounds)
    rates = run_stream_rates(inference, runs) or [[] for _ in range(runs)]
    seen = [[rate / scale for rate in run] for run in seen_stream_rates(tracker)]
    if len(seen) == runs:  # both views of the same streams: either may show a burst
        rates = [[*a, *b] for a, b in zip(rates, seen, strict=True)]
    reads = stream_reads(tracker)
    if len(reads) != runs:  # no progress lines: how the tokens arrived is not known
        reads = [[] for _ in range(runs)]
    return [
        RunSeen(tuple(r), tuple(how), bound)
        for r, how, bound in zip(rates, reads, bounds, strict=True)
    ]


@dataclass
class _ProcessState:
    current: PointSpec | None = None
    bounds: dict[PointSpec, float | None] = field(default_factory=dict)
    run: tuple[PointSpec, int] | None = None  # the point and run whose requests are running
    run_bounds: dict[tuple[PointSpec, int], float | None] = field(default_factory=dict)
    first: Counters | None = None  # the process's first good scrape of the engine
    overall: float | None = None  # the decode bound over the whole process (`_result`)
    latency_s: float | None = None
    hung_for: float = 0.0
    forensics: str = ""
    stderr_tail: list[str] = field(default_factory=list)

    def held_to(self, spec: PointSpec, runs: int) -> list[float | None]:
        """Each run's bound: the engine's own rate over that run, else over the point, else over
        the whole process (a loaded host's scrape timed out: with no bound at all, a burst in
        every run read 55,921 t/s in CI)."""
        point = self.bounds.get(spec) or self.overall
        return [self.run_bounds.get((spec, run)) or point for run in range(runs)]


def find_script(executable: str | None = None) -> str:
    """llama-benchy's script: beside this interpreter (a venv's bin, even when that venv is not
    on PATH), else on PATH; a one-line reason (exit 2) when it is in neither."""
    executable = executable or sys.executable
    beside = Path(executable).parent / "llama-benchy"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("llama-benchy")
    if found:
        return found
    raise InputError(
        f"--driver llama-benchy: no llama-benchy script beside {executable} nor on PATH "
        "(install the bench extra: pip install 'cockpit[bench]')"
    )
