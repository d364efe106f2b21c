"""`--driver llama-benchy`: the operators' own client (PyPI 0.4.0) run point by point.

Each point is one llama-benchy process with the flags the seed's fix needs: at depth > 0
`--enable-prefix-caching` unless `--cold` (then `--no-cache`, tool-eval-bench's choice), the
engine's tokenizer (`--tokenizer DIR`), and, offline, our own book served on loopback
(`--book-url`). Its `--emit-progress -` JSON lines become our events live; its `--save-result`
JSON becomes the point's result. The watchdog and the honesty checks apply as for the built-in
driver: the progress events carry wall timestamps, from which each run's decode window is cut.

One process per group of points sharing pp/tg/mode (its startup costs seconds); a hung process
is interrupted (llama-benchy saves partial results on SIGINT) and the rest is retried once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx

from cockpit.bench import forensics, honesty
from cockpit.bench.client import Clock
from cockpit.bench.driver import Driver, DriverConfig
from cockpit.bench.events import (
    BenchWarning,
    LatencyMeasured,
    PointFinished,
    PointStarted,
    RequestProgress,
)
from cockpit.bench.method import PhaseStats, Stat, implausible_runs
from cockpit.bench.models import (
    EngineObservation,
    Flag,
    FlagKind,
    HangRecord,
    PointResult,
    PointSpec,
)
from cockpit.bench.prompts import book_text
from cockpit.bench.watch import Counters, MetricsSampler, Watchdog
from cockpit.errors import InputError
from cockpit.events import OpEvent

if TYPE_CHECKING:
    from aiohttp import web

PROGRESS_SCHEMA = "llama-benchy-progress.v1"


def benchy_argv(
    cfg: DriverConfig, points: Sequence[PointSpec], book_url: str, result: Path
) -> list[str]:
    """One llama-benchy command line for points sharing pp, tg and mode (it runs the grid)."""
    first = points[0]
    argv = [
        *cfg.exe,
        "--base-url", f"{cfg.base_url}/v1",
        "--model", cfg.model,
        "--tokenizer", str(cfg.tokenizer_dir),
        "--book-url", book_url,
        "--pp", str(first.pp),
        "--tg", str(first.tg),
        "--depth", *(str(d) for d in sorted({p.depth for p in points})),
        "--concurrency", *(str(c) for c in sorted({p.concurrency for p in points})),
        "--runs", str(cfg.runs),
        "--latency-mode", cfg.latency_mode,
        "--skip-coherence",
        "--save-result", str(result),
        "--format", "json",
        "--emit-progress", "-",
    ]  # fmt: skip
    if not cfg.warmup:
        argv.append("--no-warmup")
    if not cfg.adapt_prompt:
        argv.append("--no-adapt-prompt")
    if first.cold:
        argv.append("--no-cache")
    elif any(p.depth > 0 for p in points):
        argv.append("--enable-prefix-caching")  # applies to depth > 0 only
    return argv


def groups(points: Sequence[PointSpec]) -> list[list[PointSpec]]:
    """Points split by (pp, tg, cold), each group one llama-benchy invocation, order kept."""
    out: dict[tuple[int, int, bool], list[PointSpec]] = {}
    for p in points:
        out.setdefault((p.pp, p.tg, p.cold), []).append(p)
    return list(out.values())


def parse_progress_line(line: str) -> dict[str, Any] | None:
    """One llama-benchy progress event, None for anything else."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("schema") != PROGRESS_SCHEMA:
        return None
    return data


def _stat(value: Any, factor: float) -> Stat | None:
    if not isinstance(value, dict) or "mean" not in value:
        return None
    values = tuple(float(v) * factor for v in value.get("values") or ())
    return Stat(float(value["mean"]) * factor, float(value.get("std", 0.0)) * factor, values)


def _phase(bench: dict[str, Any], scale: float, runs: int) -> PhaseStats:
    rate, ms = 1.0 / scale, scale
    concurrency = int(bench.get("concurrency", 1))
    return PhaseStats(
        concurrency=concurrency,
        pp=_stat(bench.get("pp_throughput"), rate),
        pp_req=_stat(bench.get("pp_req_throughput"), rate),
        tg=_stat(bench.get("tg_throughput"), rate),
        tg_req=_stat(bench.get("tg_req_throughput"), rate),
        ttfr_ms=_stat(bench.get("ttfr"), ms),
        est_ppt_ms=_stat(bench.get("est_ppt"), ms),
        e2e_ttft_ms=_stat(bench.get("e2e_ttft"), ms),
        requests=runs * concurrency,
        errors=0,
    )


def parse_benchy_result(
    data: dict[str, Any], scale: float, runs: int
) -> dict[tuple[int, int, int, int], tuple[PhaseStats | None, PhaseStats | None]]:
    """(depth, c, pp, tg) → (inference, context load) from llama-benchy's JSON result.

    Rates are divided and times multiplied by the simulator's time scale (engine units).
    """
    out: dict[tuple[int, int, int, int], tuple[PhaseStats | None, PhaseStats | None]] = {}
    for bench in data.get("benchmarks") or []:
        key = (
            int(bench["context_size"]),
            int(bench["concurrency"]),
            int(bench["prompt_size"]),
            int(bench["response_size"]),
        )
        inference, context = out.get(key, (None, None))
        phase = _phase(bench, scale, runs)
        if bench.get("is_context_prefill_phase"):
            context = phase
        else:
            inference = phase
        out[key] = (inference, context)
    return out


def _cut(stat: Stat | None, bad: set[int], runs: int) -> Stat | None:
    """`stat` without the values of the runs in `bad` (one value per run, or per request)."""
    if stat is None or not bad:
        return stat
    values = stat.values
    if not values or len(values) % runs:
        return stat
    per_run = len(values) // runs
    return Stat.of([v for i, v in enumerate(values) if i // per_run not in bad])


def drop_runs(phase: PhaseStats, bad: set[int], runs: int) -> PhaseStats:
    """A llama-benchy phase with the runs in `bad` left out of every figure (counted)."""
    if not bad:
        return phase
    return replace(
        phase,
        **{
            name: _cut(getattr(phase, name), bad, runs)
            for name in ("pp", "pp_req", "tg", "tg_req", "ttfr_ms", "est_ppt_ms", "e2e_ttft_ms")
        },
        dropped=len(bad),
    )


def run_stream_rates(phase: PhaseStats, runs: int) -> list[list[float]]:
    """Per run, each stream's tg t/s, from llama-benchy's per-request values."""
    stat = phase.tg_req if phase.concurrency > 1 else phase.tg
    values = stat.values if stat else ()
    if not values or len(values) % runs:
        return []
    per_run = len(values) // runs
    return [list(values[i * per_run : (i + 1) * per_run]) for i in range(runs)]


@dataclass
class _Request:
    run: int
    start: float
    first_token: float | None = None
    end: float | None = None
    tokens: int = 0
    chunks: list[tuple[float, int]] = field(default_factory=list)  # (wall ts, tokens) each

    def decode_rate(self) -> float | None:
        """t/s after the first chunk, as its progress events were stamped (one per chunk, as
        llama-benchy parsed it: a burst of chunks from one read is microseconds apart)."""
        if len(self.chunks) < 2:
            return None
        first = self.chunks[0][0]
        tokens = sum(n for _, n in self.chunks[1:])
        span = self.chunks[-1][0] - first
        if tokens <= 0:
            return None
        return tokens / span if span > 0 else math.inf


@dataclass
class ProgressTracker:
    """llama-benchy's progress events of one point, grouped into its measured batches."""

    spec: PointSpec
    requests: dict[int, _Request] = field(default_factory=dict)

    def feed(self, event: dict[str, Any]) -> tuple[int, int, str, int, bool] | None:
        """Update from one event; (run, stream, phase, tokens, done) when a request moved."""
        kind, ts = event.get("type"), float(event.get("ts", 0.0))
        rid = event.get("request_id")
        if not isinstance(rid, int):
            return None
        if kind == "request_start":
            self.requests[rid] = _Request(int(event.get("run_index", 0)), ts)
        req = self.requests.get(rid)
        if req is None:
            return None
        if kind == "request_first_token":
            req.first_token = ts
        elif kind == "tokens":
            count = int(event.get("count", 0))
            req.tokens += count
            req.chunks.append((ts, count))
        elif kind == "request_end":
            req.end = ts
            req.tokens = int(event.get("total_tokens", req.tokens))
        stream, phase = self._place(rid)
        return req.run, stream, phase, req.tokens, req.end is not None

    def _place(self, rid: int) -> tuple[int, str]:
        """(stream, phase) of a request: a warm run sends c context loads, then c inferences."""
        run = self.requests[rid].run
        ids = sorted(i for i, r in self.requests.items() if r.run == run)
        index = ids.index(rid)
        c = self.spec.concurrency
        if self.spec.warm_prefix:
            return index % c, "context" if index < c else "inference"
        return index % c, "inference"

    def inference_batches(self) -> list[list[_Request]]:
        batches: dict[int, list[_Request]] = {}
        for rid in sorted(self.requests):
            _, phase = self._place(rid)
            if phase == "inference":
                batches.setdefault(self.requests[rid].run, []).append(self.requests[rid])
        return list(batches.values())


def seen_stream_rates(tracker: ProgressTracker) -> list[list[float]]:
    """Per measured run, each stream's decode t/s from the progress events: llama-benchy leaves a
    stream out of its own per-request values when its decode had no span (a whole stream in one
    read), so its values alone cannot always be split by run, and a burst slips through."""
    return [
        [rate for r in batch if (rate := r.decode_rate()) is not None]
        for batch in tracker.inference_batches()
    ]


def decode_windows(tracker: ProgressTracker) -> list[tuple[tuple[float, float], float]]:
    """Per measured batch: ((earliest first token, latest end), first-token stagger), wall s."""
    out = []
    for batch in tracker.inference_batches():
        found = honesty.decode_window(
            [r.first_token for r in batch if r.first_token is not None],
            [r.end for r in batch if r.end is not None],
        )
        if found is not None:
            out.append(found)
    return out


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
                    httpx.AsyncClient(timeout=30.0) as http,
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
            found = _read_result(result_file, self.cfg.time_scale, self.cfg.runs)
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
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        by_key = {(p.depth, p.concurrency): p for p in points}
        by_request: dict[int, ProgressTracker] = {}
        index = {p: i for i, p in enumerate(self.cfg.points)}
        # the engine's own decode rate per point, from its counters at the points' boundaries
        # (its histograms count a request when it finishes, so a scrape as the next point
        # starts holds exactly the previous point's requests)
        before = state.first = await sampler.scrape()
        try:
            watchdog.touch()
            async for event in _lines(proc, watchdog, state):
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
                    if spec not in trackers:
                        after = await sampler.scrape()
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
                await _interrupt(proc)  # llama-benchy saves its partial results on SIGINT
        finally:
            await _stop(proc)

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
        flags: list[Flag] = []
        if inference is not None:
            # a point whose own scrapes failed (a loaded host: the scrape timed out) is held to
            # the whole run's bound: with none, a burst in every run read 55,921 t/s (CI)
            bound = state.bounds.get(spec) or state.overall
            rates = run_stream_rates(inference, runs)
            seen = seen_stream_rates(tracker)
            if len(seen) == runs:  # both views of the same streams: either may show a burst
                rates = [[*a, *b] for a, b in zip(rates or [[]] * runs, seen, strict=True)]
            bad = implausible_runs(rates, [bound] * runs)
            if bad:
                flags.append(honesty.implausible_flag(spec, bad, runs))
                inference = drop_runs(inference, set(bad), runs)
            if inference.tg is None and not inference.errors:  # llama-benchy dropped every run
                flags.append(honesty.no_decode_flag(spec))
        observations = [
            EngineObservation(window_s=(end - start) * scale, stagger_s=stagger * scale)
            for (start, end), stagger in decode_windows(tracker)
        ]
        engine = honesty.worst(observations)
        flag = honesty.prefill_in_decode(spec, engine)
        if flag is not None:
            flags.append(flag)
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


@dataclass
class _ProcessState:
    current: PointSpec | None = None
    bounds: dict[PointSpec, float | None] = field(default_factory=dict)
    first: Counters | None = None  # the process's first good scrape of the engine
    overall: float | None = None  # the decode bound over the whole process (`_result`)
    latency_s: float | None = None
    hung_for: float = 0.0
    forensics: str = ""
    stderr_tail: list[str] = field(default_factory=list)


async def _lines(
    proc: asyncio.subprocess.Process, watchdog: Watchdog, state: _ProcessState
) -> AsyncIterator[dict[str, Any]]:
    """Progress events from stdout (stderr kept as a tail) until exit or the watchdog fires."""
    assert proc.stdout is not None and proc.stderr is not None
    queue: asyncio.Queue[tuple[str, str | None]] = asyncio.Queue()

    async def pump(name: str, stream: asyncio.StreamReader) -> None:
        async for raw in stream:
            await queue.put((name, raw.decode(errors="replace").rstrip("\n")))
        await queue.put((name, None))

    pumps = [
        asyncio.create_task(pump("out", proc.stdout)),
        asyncio.create_task(pump("err", proc.stderr)),
    ]
    open_streams = 2
    try:
        while open_streams:
            try:
                async with asyncio.timeout(0.2):
                    name, line = await queue.get()
            except TimeoutError:
                if watchdog.hung():
                    return
                continue
            if line is None:
                open_streams -= 1
                continue
            watchdog.touch()
            if name == "err":
                state.stderr_tail[:] = [*state.stderr_tail[-19:], line]
                continue
            event = parse_progress_line(line)
            if event is not None:
                yield event
    finally:
        for task in pumps:
            task.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)


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


def _read_result(
    path: Path, scale: float, runs: int
) -> dict[tuple[int, int, int, int], tuple[PhaseStats | None, PhaseStats | None]]:
    try:
        return parse_benchy_result(json.loads(path.read_text()), scale, runs)
    except (OSError, ValueError, KeyError, TypeError):
        return {}


async def serve_book() -> tuple[web.AppRunner, str]:
    """Our corpus on loopback for `--book-url` (llama-benchy downloads its prompt text)."""
    from aiohttp import web  # only llama-benchy runs need it; importing it costs ~0.25 s

    text = book_text()

    async def book(_: web.Request) -> web.Response:
        return web.Response(text=text)

    app = web.Application()
    app.router.add_get("/book.txt", book)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}/book.txt"


async def _interrupt(proc: asyncio.subprocess.Process, grace: float = 10.0) -> None:
    """SIGINT, then wait a little for llama-benchy to write what it has."""
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGINT)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(grace):
            await proc.wait()


async def _stop(proc: asyncio.subprocess.Process) -> None:
    """Never leave the client running: terminate, then kill."""
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    try:
        async with asyncio.timeout(5.0):
            await proc.wait()
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
