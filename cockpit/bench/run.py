"""The bench operation: a driver's events, the cross-point honesty checks, quality, the report.

`bench(request)` is an async generator of events like every operation: `Planned`, the driver's
point events, `BenchWarning`s, and one final `SweepFinished` naming the report files.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import statistics
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import httpx

from cockpit.api_key import auth_headers
from cockpit.bench import artifacts, engine_loss, environment, honesty
from cockpit.bench.benchy import BenchyDriver, find_script
from cockpit.bench.driver import DriverConfig
from cockpit.bench.events import (
    OP,
    BenchWarning,
    ClientInfo,
    LatencyMeasured,
    PointFinished,
    SweepFinished,
    warning,
)
from cockpit.bench.likeness import likeness
from cockpit.bench.models import Environment, PointResult, PointSpec, Quality, Report, SweepPlan
from cockpit.bench.quality import parse_quality, quality_argv
from cockpit.bench.sweep import BuiltinDriver
from cockpit.bench.sweep_plan import beyond_context, nothing_fits
from cockpit.errors import EXIT_FAILED, EXIT_OK, InputError
from cockpit.events import OpEvent

CONCURRENCY_SEMANTICS = (
    "c>1 pp and tg are batch totals over all streams (llama-benchy's tg_throughput, what "
    "tool-eval-bench shows); tg t/s (req) is per stream"
)


@dataclass(frozen=True)
class BenchRequest:
    lane: str
    cluster: str
    label: str
    endpoint: str
    points: tuple[PointSpec, ...]
    tokenizer_dir: Path
    reports_dir: Path = Path("reports")
    runs: int = 3
    warmup: bool = True  # one unrecorded run per point first (llama-benchy's default)
    driver: str = "builtin"
    quality: bool = False
    model: str | None = None
    time_scale: float | None = None  # None: $COCKPIT_TIME_SCALE (the simulator's launchers), or 1
    hang_timeout_s: float = 300.0
    metrics_interval_s: float = 5.0
    recipe_hash: str = ""
    engine_image: str = ""
    client_host: str = field(default_factory=socket.gethostname)
    benchy_exe: tuple[str, ...] = ()  # empty: the script beside this interpreter, else on PATH
    quality_exe: str = "tool-eval-bench"
    max_model_len: int | None = None  # the lane's (None: asked); deeper points are skipped
    adapt_prompt: bool = True
    tokenizer_source: str = ""  # where the tokenizer came from, for the report
    api_key: str | None = field(default=None, repr=False)  # the lane's (`cockpit.api_key`)
    head: str = ""  # the lane's head node: named when its engine is lost (not the forward's port)


def prefix_cache_mode(points: tuple[PointSpec, ...]) -> str:
    if all(p.cold or p.depth == 0 for p in points) and any(p.cold for p in points):
        return (
            "COLD: context + prompt as one request, no prefix warm-up (the old behaviour; c>1 "
            "deep points measure serialised prefills)"
        )
    return "warm prefix: a context-load request, then context + prompt (depth > 0)"


def driver_class(name: str) -> type[BuiltinDriver] | type[BenchyDriver]:
    """The driver `--driver NAME` selects (`builtin` or `llama-benchy`)."""
    return BenchyDriver if name == "llama-benchy" else BuiltinDriver


def make_driver(
    req: BenchRequest, model: str, scale: float, url: str | None = None
) -> BuiltinDriver | BenchyDriver:
    """The driver for `req`, sending to `url` (default: the request's endpoint)."""
    cfg = DriverConfig(
        base_url=url or req.endpoint,
        model=model,
        points=req.points,
        tokenizer_dir=req.tokenizer_dir,
        runs=req.runs,
        warmup=req.warmup,
        time_scale=scale,
        hang_timeout_s=req.hang_timeout_s,
        metrics_interval_s=req.metrics_interval_s,
        exe=req.benchy_exe or ((find_script(),) if req.driver == "llama-benchy" else ()),
        adapt_prompt=req.adapt_prompt,
        api_key=req.api_key,
    )
    return driver_class(req.driver)(cfg, lane=req.lane, cluster=req.cluster)


QUALITY_KEY_ENV = "TOOL_EVAL_API_KEY"
"""tool-eval-bench's API key variable (its `--api-key` would show the key in `ps`)."""
TIME_SCALE_ENV = "COCKPIT_TIME_SCALE"
"""Set by the simulator's own launchers (the demo, the test fleets) for the bench process: the
engine's clock runs this many times faster than the wall. Never read from an endpoint: a real
engine's status fields (a `speed`) would silently rescale every figure."""


def time_scale_default(environ: dict[str, str] | None = None) -> float:
    """The time scale `$COCKPIT_TIME_SCALE` sets, 1 when unset (every real engine)."""
    raw = (os.environ if environ is None else environ).get(TIME_SCALE_ENV, "")
    try:
        value = float(raw) if raw else 1.0
    except ValueError:
        raise InputError(f"${TIME_SCALE_ENV}={raw!r}: expected a positive number") from None
    if value <= 0:
        raise InputError(f"${TIME_SCALE_ENV}={raw!r}: expected a positive number")
    return value


async def engine_facts(req: BenchRequest, url: str) -> tuple[str, str, int | None]:
    """(model, image, max-model-len) as the engine reports them, the request's values first."""
    async with httpx.AsyncClient(timeout=30.0, headers=auth_headers(req.api_key)) as http:
        listed = await environment.served_models(http, url)
        model = req.model or (listed[0]["id"] if listed else "")
        if not model:
            raise InputError(f"{url}/v1/models lists no model")
        status = await environment.engine_status(http, url)
    mml = req.max_model_len
    if mml is None:
        entry = next((m for m in listed if m.get("id") == model), {})
        value = entry.get("max_model_len")
        mml = value if isinstance(value, int) and value > 0 else None
    return model, req.engine_image or str(status.get("image", "")), mml


PROMPT_MODES = {
    True: "adapt-prompt (llama-benchy's default): context and prompt trimmed by the chat "
    "template's tokens, so the engine counts the point's exact sizes",
    False: "no-adapt-prompt: context and prompt cut to the point's sizes, the chat template's "
    "tokens come on top",
}


async def bench(
    req: BenchRequest,
    source: Callable[[str, float], AsyncIterator[OpEvent]] | None = None,
    local_url: str | None = None,
    saved: Callable[[Path], None] | None = None,
) -> AsyncIterator[OpEvent]:
    """Run the sweep and write the report; a sweep cancelled or failed midway still writes one,
    marked PARTIAL, with the points it measured, and so does a sweep whose engine is lost
    (`engine_loss`: it stops there, ends not ok, and names the points it did not measure).

    `source(model, scale)` replaces the local driver (a remote bench host's event stream);
    `local_url` is how this machine reaches the engine (an SSH forward) when not `req.endpoint`;
    the report names `req.endpoint`. `saved(path)`: told where a cancelled or failed sweep's
    PARTIAL report went (no event can say it then), for the history.
    """
    model, image, mml = await engine_facts(req, local_url or req.endpoint)
    req = replace(req, max_model_len=mml)
    plan = SweepPlan.of(req.points, req.runs, req.driver)  # as asked: skipped points included
    skipped = beyond_context(req.points, mml)
    if skipped:
        if mml is not None and len(skipped) == len(req.points):
            raise InputError(nothing_fits(mml))
        req = replace(req, points=tuple(p for p in req.points if p not in skipped))
    scale = req.time_scale if req.time_scale is not None else time_scale_default()
    url = local_url or req.endpoint
    events = source(model, scale) if source else make_driver(req, model, scale, url).events()
    sweep = _Sweep(
        req, model, image, scale, remote=source is not None, forwarded=local_url, plan=plan
    )
    for spec in skipped:
        note = (
            f"{spec.label}: skipped, {spec.depth + spec.pp + spec.tg} tokens exceed the lane's "
            f"max-model-len {mml}"
        )
        sweep.warnings.append(note)
        yield warning(note, point=spec, lane=req.lane)
    lost = ""
    try:
        async for found in events:
            event = sweep.in_lane_terms(found)
            if isinstance(event, PointFinished) and engine_loss.measured_nothing(event.result):
                gone = await engine_loss.engine_gone(url, req.api_key)
                if gone is not None:
                    lost = sweep.lose(event.result.spec, gone)
                    yield replace(event, result=sweep.results[-1])
                    break
            sweep.record(event)
            yield event
    except BaseException as exc:
        why = (
            "cancelled"
            if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt)
            else (f"failed: {type(exc).__name__}: {exc}")
        )
        # no await here: a cancelled task must not wait for anything before it ends
        partial = f"sweep {why} after {len(sweep.results)} points"
        json_path, _ = sweep.save(sweep.finish()[0], partial=partial, draw_now=False)
        if saved is not None:
            saved(json_path)
        raise
    if lost:
        await _close(events)
    results, cross = sweep.finish()
    for spec, flags in cross.items():
        for flag in flags:
            yield warning(f"{spec.label}: {flag.message}", point=spec, flag=flag, lane=req.lane)
    quality: Quality | None = None
    if req.quality and not lost:
        quality, note = await run_quality(replace(req, endpoint=url), model)
        if note:
            sweep.warnings.append(note)
            yield warning(note, lane=req.lane)
    # the report files (every earlier report is read for the baseline; the new one is fsynced)
    # are handled in a thread: the TUI runs this operation on its event loop
    json_path, md_path = await asyncio.to_thread(sweep.save, results, quality, lost)
    flagged = sum(1 for r in results if r.flags)
    ok = not lost and not any(r.skipped for r in results)
    yield SweepFinished(
        op=OP,
        lane=req.lane,
        cluster=req.cluster,
        ok=ok,
        exit_code=EXIT_OK if ok else EXIT_FAILED,
        summary=(f"PARTIAL: {lost}; " if lost else "")
        + f"{len(results)} points, {flagged} flagged → {json_path}",
        report_json=str(json_path),
        report_md=str(md_path),
    )


async def _close(events: AsyncIterator[OpEvent]) -> None:
    """End a driver's event stream left midway (its requests, its process)."""
    close = getattr(events, "aclose", None)
    if close is not None:
        await close()


class _Sweep:
    """What a sweep's events said so far, and the report they make (whole or PARTIAL)."""

    def __init__(
        self,
        req: BenchRequest,
        model: str,
        image: str,
        scale: float,
        remote: bool,
        forwarded: str | None = None,
        plan: SweepPlan | None = None,
    ):
        """`forwarded`: the local URL of an SSH forward the local driver dials (named in the
        report's link instead of the driver's own guess); `plan`: what was asked, for the report."""
        self.req, self.model, self.image, self.scale, self.remote = req, model, image, scale, remote
        self.forwarded, self.plan = forwarded, plan
        self.latencies: list[float] = []
        self.client = {"host": req.client_host, "link": "unknown"}
        self.results: list[PointResult] = []
        self.warnings: list[str] = []

    def record(self, event: OpEvent) -> None:
        if isinstance(event, LatencyMeasured):
            self.latencies.append(event.latency_s)
        if isinstance(event, ClientInfo):
            self.client = {"host": event.host, "link": event.link}
            if self.forwarded and not self.remote:  # the local driver dialled the forward
                self.client["link"] = f"SSH port forward to {self.req.endpoint}"
        if isinstance(event, PointFinished):
            self.results.append(event.result)
        if isinstance(event, BenchWarning):
            self.warnings.append(event.message)

    def in_lane_terms(self, event: OpEvent) -> OpEvent:
        """`event` with the local forward's address, in its flags and warnings, replaced by the
        node and endpoint it leads to: `127.0.0.1:42589` tells an operator nothing."""
        if not self.forwarded:
            return event
        place = engine_loss.where(self.req.endpoint, self.req.head)

        def said(text: str) -> str:
            return engine_loss.named(text, self.forwarded, place)

        if isinstance(event, BenchWarning):
            return replace(event, message=said(event.message))
        if isinstance(event, PointFinished):
            flags = tuple(replace(f, message=said(f.message)) for f in event.result.flags)
            return replace(event, result=replace(event.result, flags=flags))
        return event

    def lose(self, spec: PointSpec, gone: str) -> str:
        """The engine did not answer after `spec` measured nothing: that point is not measured,
        and the sweep's PARTIAL line names the node, the cause and every point left."""
        req = self.req
        place = engine_loss.where(req.endpoint, req.head)
        reason = engine_loss.named(f"{place} does not answer: {gone}", self.forwarded, place)
        self.results.append(engine_loss.lost_point(spec, reason))
        return engine_loss.partial_reason(spec, reason, req.points, [r.spec for r in self.results])

    def finish(self) -> tuple[list[PointResult], dict[PointSpec, tuple[honesty.Flag, ...]]]:
        """The results with the cross-point flags added, and those flags."""
        req = self.req
        target = (
            ("--recipe", req.lane, "--cluster", req.cluster)
            if req.cluster
            else ("--endpoint", req.endpoint, "--lane", req.lane)
        )
        cross = honesty.cross_point_flags(self.results, target)
        results = [replace(r, flags=(*r.flags, *cross.get(r.spec, ()))) for r in self.results]
        return results, cross

    def save(
        self,
        results: list[PointResult],
        quality: Quality | None = None,
        partial: str = "",
        draw_now: bool = True,
    ) -> tuple[Path, Path]:
        req = self.req
        latency = statistics.median(self.latencies) if self.latencies else 0.0
        report = Report(
            label=artifacts.safe_label(req.label),
            created=artifacts.timestamp(),
            lane=req.lane,
            cluster=req.cluster,
            environment=Environment(
                client_host=self.client["host"],
                client_link=self.client["link"],
                prefix_cache_mode=prefix_cache_mode(req.points),
                concurrency_semantics=CONCURRENCY_SEMANTICS,
                driver=driver_class(req.driver).name
                + (f" on {req.client_host}" if self.remote else ""),
                endpoint=req.endpoint,
                model=self.model,
                engine_image=self.image,
                recipe_hash=req.recipe_hash,
                latency_ms=latency * 1000,
                time_scale=self.scale,
                prompt_mode=PROMPT_MODES[req.adapt_prompt],
                tokenizer=req.tokenizer_source or str(req.tokenizer_dir),
            ),
            points=tuple(results),
            quality=quality,
            warnings=tuple(self.warnings),
            partial=partial,
            plan=self.plan,
        )
        baseline = artifacts.baseline_for(req.reports_dir, likeness(report))
        if baseline is not None:
            report = replace(report, baseline=baseline.name)
        return artifacts.save_report(req.reports_dir, report, draw_now=draw_now)


async def run_quality(req: BenchRequest, model: str) -> tuple[Quality | None, str]:
    """Run tool-eval-bench's quality part; (score, a note when it could not be measured)."""
    exe = shutil.which(req.quality_exe)
    if exe is None:
        return None, f"quality not measured: {req.quality_exe} is not installed"
    out_dir = req.reports_dir / f".tool-eval-bench-{artifacts.safe_label(req.label)}"
    argv = quality_argv(req.endpoint, model, req.label, out_dir, exe=exe)
    out_dir.mkdir(parents=True, exist_ok=True)
    # Run inside its output folder: tool-eval-bench keeps a data/benchmarks.sqlite in its cwd.
    # The lane's key goes in the variable it reads, never on its command line.
    env = {**os.environ, **({QUALITY_KEY_ENV: req.api_key} if req.api_key else {})}
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=out_dir,
        env=env,
    )
    try:
        output, _ = await proc.communicate()
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
    texts = [output.decode(errors="replace")]
    texts += [p.read_text(errors="replace") for p in sorted(out_dir.glob("**/*.md"))]
    for text in reversed(texts):
        quality = parse_quality(text)
        if quality is not None:
            return quality, ""
    return None, f"quality not measured: tool-eval-bench exited {proc.returncode} without a score"
