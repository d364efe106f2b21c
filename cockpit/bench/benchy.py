"""`--driver llama-benchy`: the operators' own client (PyPI 0.4.0) run point by point.

Each point is one llama-benchy process with the flags the seed's fix needs: at depth > 0
`--enable-prefix-caching` unless `--cold` (then `--no-cache`, tool-eval-bench's choice), the
engine's tokenizer (`--tokenizer DIR`), and, offline, our own book served on loopback
(`--book-url`). Its `--emit-progress -` JSON lines become our events live; its `--save-result`
JSON becomes the point's result. The watchdog and the honesty checks apply as for the built-in
driver: the progress events carry wall timestamps, from which each run's decode window is cut.

One process per point (not one per sweep) so a hung point is killed, retried once or skipped
without losing the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from aiohttp import web

from cockpit.bench import forensics, honesty
from cockpit.bench.client import Clock
from cockpit.bench.events import (
    OP,
    BenchWarning,
    LatencyMeasured,
    PointFinished,
    PointStarted,
    RequestProgress,
)
from cockpit.bench.method import PhaseStats, Stat
from cockpit.bench.models import (
    EngineObservation,
    Flag,
    FlagKind,
    HangRecord,
    PointResult,
    PointSpec,
)
from cockpit.bench.prompts import book_text
from cockpit.bench.watch import MetricsSampler, Watchdog
from cockpit.ops.events import OpEvent, Planned

PROGRESS_SCHEMA = "llama-benchy-progress.v1"


@dataclass(frozen=True)
class BenchyConfig:
    base_url: str
    model: str
    points: tuple[PointSpec, ...]
    tokenizer_dir: Path
    runs: int = 3
    time_scale: float = 1.0
    hang_timeout_s: float = 300.0
    metrics_interval_s: float = 5.0
    retries: int = 1
    exe: tuple[str, ...] = ("llama-benchy",)
    latency_mode: str = "api"


def benchy_argv(cfg: BenchyConfig, spec: PointSpec, book_url: str, result: Path) -> list[str]:
    """The llama-benchy command line for one point."""
    argv = [
        *cfg.exe,
        "--base-url", f"{cfg.base_url}/v1",
        "--model", cfg.model,
        "--tokenizer", str(cfg.tokenizer_dir),
        "--book-url", book_url,
        "--pp", str(spec.pp),
        "--tg", str(spec.tg),
        "--depth", str(spec.depth),
        "--concurrency", str(spec.concurrency),
        "--runs", str(cfg.runs),
        "--latency-mode", cfg.latency_mode,
        "--skip-coherence",
        "--save-result", str(result),
        "--format", "json",
        "--emit-progress", "-",
    ]  # fmt: skip
    if spec.cold:
        argv.append("--no-cache")
    elif spec.depth > 0:
        argv.append("--enable-prefix-caching")
    return argv


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


@dataclass
class _Request:
    run: int
    start: float
    first_token: float | None = None
    end: float | None = None
    tokens: int = 0


@dataclass
class ProgressTracker:
    """llama-benchy's progress events of one point, grouped into its measured batches."""

    spec: PointSpec
    requests: dict[int, _Request] = field(default_factory=dict)
    latency_s: float = 0.0
    complete: str = ""

    def feed(self, event: dict[str, Any]) -> tuple[int, int, str, int, bool] | None:
        """Update from one event; (run, stream, phase, tokens, done) when a request moved."""
        kind, ts = event.get("type"), float(event.get("ts", 0.0))
        if kind == "latency_measured":
            self.latency_s = float(event.get("latency_s", 0.0))
        elif kind == "bench_complete":
            self.complete = str(event.get("status", ""))
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
            req.tokens += int(event.get("count", 0))
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


def decode_windows(tracker: ProgressTracker) -> list[tuple[tuple[float, float], float]]:
    """Per measured batch: ((earliest first token, latest end), first-token stagger), wall s."""
    out = []
    for batch in tracker.inference_batches():
        firsts = [r.first_token for r in batch if r.first_token is not None]
        ends = [r.end for r in batch if r.end is not None]
        if firsts and ends and max(ends) > min(firsts):
            out.append(((min(firsts), max(ends)), max(firsts) - min(firsts)))
    return out


class _WallClock(Clock):
    """`time.time()`: the clock of llama-benchy's progress events."""

    def now(self) -> float:
        return time.time()


class BenchyDriver:
    """Runs each point as a llama-benchy process; yields the same events as the built-in."""

    name = "llama-benchy 0.4.0"

    def __init__(self, cfg: BenchyConfig, lane: str = "", cluster: str = "") -> None:
        self.cfg = cfg
        self.lane, self.cluster = lane, cluster

    def _ev(self, cls: type[OpEvent], **kw: object) -> OpEvent:
        return cls(op=OP, lane=self.lane, cluster=self.cluster, **kw)  # type: ignore[arg-type]

    async def events(self) -> AsyncIterator[OpEvent]:
        cfg = self.cfg
        yield self._ev(Planned, steps=tuple(p.label for p in cfg.points), summary=cfg.base_url)
        with tempfile.TemporaryDirectory(prefix="cockpit-benchy-") as tmp:
            runner, book_url = await _serve_book()
            try:
                async with httpx.AsyncClient(timeout=30.0) as http:
                    interval = min(cfg.metrics_interval_s, cfg.hang_timeout_s / 4)
                    sampler = MetricsSampler(http, cfg.base_url, _WallClock(), interval)
                    watchdog = Watchdog(sampler, cfg.hang_timeout_s)
                    sampling = asyncio.create_task(sampler.run())
                    try:
                        for index, spec in enumerate(cfg.points):
                            yield self._ev(
                                PointStarted, point=spec, index=index, total=len(cfg.points)
                            )
                            async for event in self._point(
                                spec, Path(tmp), book_url, sampler, watchdog
                            ):
                                yield event
                    finally:
                        sampling.cancel()
                        await asyncio.gather(sampling, return_exceptions=True)
            finally:
                await runner.cleanup()

    async def _point(
        self,
        spec: PointSpec,
        tmp: Path,
        book_url: str,
        sampler: MetricsSampler,
        watchdog: Watchdog,
    ) -> AsyncIterator[OpEvent]:
        hangs: list[HangRecord] = []
        while True:
            result_file = tmp / f"point-{id(spec)}-{len(hangs)}.json"
            tracker = ProgressTracker(spec)
            argv = benchy_argv(self.cfg, spec, book_url, result_file)
            env = {**os.environ, "HOME": str(tmp)}  # its book cache stays in our temp dir
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
            )
            stderr_tail: list[str] = []
            hung_for = 0.0
            try:
                watchdog.touch()
                async for event in self._follow(proc, tracker, watchdog, stderr_tail):
                    yield event
                if watchdog.hung():
                    hung_for = watchdog.idle_s()
                    record = forensics.collect(
                        urlsplit(self.cfg.base_url).port or 80,
                        pid=proc.pid,
                        idle_s=hung_for,
                        engine_note=sampler.note(),
                    )
                    hangs.append(HangRecord(hung_for, "", record))
            finally:
                await _stop(proc)
            if not hung_for:
                yield self._ev(
                    PointFinished,
                    result=self._result(spec, tracker, result_file, sampler, hangs, stderr_tail),
                )
                return
            retry = len(hangs) <= self.cfg.retries
            yield self._ev(
                BenchWarning,
                message=f"{spec.label}: llama-benchy hung for {hung_for:.0f} s (no progress "
                f"line, no engine counter movement); {'retrying once' if retry else 'skipped'}",
                point=spec,
                hang=hangs[-1],
            )
            if not retry:
                hangs = [replace(h, action="skipped") for h in hangs]
                flag = Flag(
                    FlagKind.HUNG,
                    f"{spec.label}: llama-benchy hung {len(hangs)}×; skipped after a retry",
                    "see the forensics; the engine answered /metrics throughout"
                    if sampler.samples
                    else "the engine's /metrics did not answer either",
                )
                yield self._ev(
                    PointFinished,
                    result=PointResult(spec, None, hangs=tuple(hangs), flags=(flag,)),
                )
                return

    async def _follow(
        self,
        proc: asyncio.subprocess.Process,
        tracker: ProgressTracker,
        watchdog: Watchdog,
        stderr_tail: list[str],
    ) -> AsyncIterator[OpEvent]:
        """Relay progress lines until the process ends or the watchdog fires."""
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
                    name, line = await asyncio.wait_for(queue.get(), timeout=0.2)
                except TimeoutError:
                    if watchdog.hung():
                        return
                    continue
                if line is None:
                    open_streams -= 1
                    continue
                watchdog.touch()
                if name == "err":
                    stderr_tail[:] = [*stderr_tail[-19:], line]
                    continue
                event = parse_progress_line(line)
                moved = tracker.feed(event) if event else None
                if event and event.get("type") == "latency_measured":
                    yield self._ev(
                        LatencyMeasured,
                        latency_s=tracker.latency_s * self.cfg.time_scale,
                        mode=self.cfg.latency_mode,
                    )
                if moved is not None:
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
        finally:
            for task in pumps:
                task.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)

    def _result(
        self,
        spec: PointSpec,
        tracker: ProgressTracker,
        result_file: Path,
        sampler: MetricsSampler,
        hangs: list[HangRecord],
        stderr_tail: list[str],
    ) -> PointResult:
        scale = self.cfg.time_scale
        flags: list[Flag] = []
        inference = context = None
        try:
            data = json.loads(result_file.read_text())
            found = parse_benchy_result(data, scale, self.cfg.runs)
            inference, context = found.get(
                (spec.depth, spec.concurrency, spec.pp, spec.tg), (None, None)
            )
        except (OSError, ValueError, KeyError) as exc:
            tail = " | ".join(stderr_tail[-3:])
            flags.append(Flag(FlagKind.ERRORS, f"llama-benchy gave no result ({exc}): {tail}"))
        observations = [
            EngineObservation(window_s=(end - start) * scale, stagger_s=stagger * scale)
            for (start, end), stagger in decode_windows(tracker)
        ]
        engine = honesty.worst(observations)
        flag = honesty.prefill_in_decode(spec, engine)
        if flag is not None:
            flags.append(flag)
        if hangs:
            hangs = [replace(h, action="retried") for h in hangs]
            flags.append(
                Flag(FlagKind.HUNG, f"{spec.label}: llama-benchy hung once; the retry completed")
            )
        return PointResult(
            spec,
            inference,
            context=context,
            engine=engine,
            flags=tuple(flags),
            hangs=tuple(hangs),
        )


async def _serve_book() -> tuple[web.AppRunner, str]:
    """Our corpus on loopback for `--book-url` (llama-benchy downloads its prompt text)."""
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


async def _stop(proc: asyncio.subprocess.Process) -> None:
    """Never leave the client running: terminate, then kill."""
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    try:
        await asyncio.wait_for(proc.wait(), timeout=5.0)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
