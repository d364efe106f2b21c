"""The bench operation: a driver's events, the cross-point honesty checks, quality, the report.

`bench(request)` is an async generator of events like every operation: `Planned`, the driver's
point events, `BenchWarning`s, and one final `SweepFinished` naming the report files.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import httpx

from cockpit.bench import artifacts, environment, honesty
from cockpit.bench.benchy import BenchyDriver
from cockpit.bench.client import served_model
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
from cockpit.bench.models import Environment, PointResult, PointSpec, Quality, Report
from cockpit.bench.quality import parse_quality, quality_argv
from cockpit.bench.sweep import BuiltinDriver
from cockpit.ops.events import OpEvent

PERF_DEPTHS = (0, 4096, 8192)
SWEEP_DEPTHS = (16384, 65536, 131072, 262144)
CONCURRENCY_SEMANTICS = (
    "c>1 pp and tg are batch totals over all streams (llama-benchy's tg_throughput, what "
    "tool-eval-bench shows); tg t/s (req) is per stream"
)


def default_points(
    pp: int = 2048,
    tg: int = 32,
    depths: tuple[int, ...] = PERF_DEPTHS + SWEEP_DEPTHS,
    concurrency: tuple[int, ...] = (1, 2),
    cold: bool = False,
) -> tuple[PointSpec, ...]:
    """The seed's `bench` plan: perf at 0/4K/8K and the 16K…256K sweep, each at c1 and c2."""
    return tuple(PointSpec(d, c, pp, tg, cold) for d in depths for c in concurrency)


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
    time_scale: float | None = None  # None: ask the engine (the simulator says its speed)
    hang_timeout_s: float = 300.0
    metrics_interval_s: float = 5.0
    recipe_hash: str = ""
    engine_image: str = ""
    client_host: str = field(default_factory=socket.gethostname)
    benchy_exe: tuple[str, ...] = ("llama-benchy",)
    quality_exe: str = "tool-eval-bench"
    max_model_len: int | None = None  # the lane's; deeper points are skipped, not sent to fail


def beyond_context(points: tuple[PointSpec, ...], max_model_len: int | None) -> list[PointSpec]:
    """The points whose context + prompt + response cannot fit the lane's max-model-len."""
    if max_model_len is None:
        return []
    return [p for p in points if p.depth + p.pp + p.tg > max_model_len]


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


def make_driver(req: BenchRequest, model: str, scale: float) -> BuiltinDriver | BenchyDriver:
    cfg = DriverConfig(
        base_url=req.endpoint,
        model=model,
        points=req.points,
        tokenizer_dir=req.tokenizer_dir,
        runs=req.runs,
        warmup=req.warmup,
        time_scale=scale,
        hang_timeout_s=req.hang_timeout_s,
        metrics_interval_s=req.metrics_interval_s,
        exe=req.benchy_exe,
    )
    return driver_class(req.driver)(cfg, lane=req.lane, cluster=req.cluster)


async def engine_facts(req: BenchRequest, url: str) -> tuple[str, float, str]:
    """(model, time scale, image) as the engine reports them, the request's values first."""
    async with httpx.AsyncClient(timeout=30.0) as http:
        model = req.model or await served_model(http, url)
        status = await environment.engine_status(http, url)
    scale = req.time_scale if req.time_scale is not None else environment.time_scale(status)
    return model, scale, req.engine_image or str(status.get("image", ""))


async def bench(
    req: BenchRequest,
    source: Callable[[str, float], AsyncIterator[OpEvent]] | None = None,
    local_url: str | None = None,
) -> AsyncIterator[OpEvent]:
    """Run the sweep and write the report.

    `source(model, scale)` replaces the local driver (a remote bench host's event stream);
    `local_url` is how this machine reaches the engine (a forward) when not `req.endpoint`.
    """
    skipped = beyond_context(req.points, req.max_model_len)
    if skipped:
        req = replace(req, points=tuple(p for p in req.points if p not in skipped))
    model, scale, image = await engine_facts(req, local_url or req.endpoint)
    here = replace(req, endpoint=local_url) if local_url else req  # what this machine dials
    driver_name = driver_class(req.driver).name
    events = source(model, scale) if source else make_driver(here, model, scale).events()
    latency_s = 0.0
    client = {"host": req.client_host, "link": "unknown"}
    results: list[PointResult] = []
    warnings: list[str] = []
    for spec in skipped:
        note = (
            f"{spec.label}: skipped, {spec.depth + spec.pp + spec.tg} tokens exceed the lane's "
            f"max-model-len {req.max_model_len}"
        )
        warnings.append(note)
        yield warning(note, point=spec, lane=req.lane)
    async for event in events:
        if isinstance(event, LatencyMeasured):
            latency_s = event.latency_s
        if isinstance(event, ClientInfo):
            client = {"host": event.host, "link": event.link}
            if local_url and source is None:  # the local driver dialled the forward
                client["link"] = f"SSH port forward to {req.endpoint}"
        if isinstance(event, PointFinished):
            results.append(event.result)
        if isinstance(event, BenchWarning):
            warnings.append(event.message)
        yield event
    target = (
        ("--recipe", req.lane, "--cluster", req.cluster)
        if req.cluster
        else ("--endpoint", req.endpoint, "--lane", req.lane)
    )
    cross = honesty.cross_point_flags(results, target)
    for spec, flags in cross.items():
        for flag in flags:
            yield warning(f"{spec.label}: {flag.message}", point=spec, flag=flag, lane=req.lane)
    results = [replace(r, flags=(*r.flags, *cross.get(r.spec, ()))) for r in results]
    quality: Quality | None = None
    if req.quality:
        quality, note = await run_quality(here, model)
        if note:
            warnings.append(note)
            yield warning(note, lane=req.lane)
    # the report files (every earlier report is read for the baseline; the new one is fsynced)
    # are handled in a thread: the TUI runs this operation on its event loop
    baseline = await asyncio.to_thread(
        artifacts.baseline_for, req.reports_dir, req.lane, req.cluster
    )
    report = Report(
        label=artifacts.safe_label(req.label),
        created=artifacts.timestamp(),
        lane=req.lane,
        cluster=req.cluster,
        environment=Environment(
            client_host=client["host"],
            client_link=client["link"],
            prefix_cache_mode=prefix_cache_mode(req.points),
            concurrency_semantics=CONCURRENCY_SEMANTICS,
            driver=driver_name + (f" on {req.client_host}" if source else ""),
            endpoint=req.endpoint,
            model=model,
            engine_image=image,
            recipe_hash=req.recipe_hash,
            latency_ms=latency_s * 1000,
            time_scale=scale,
        ),
        points=tuple(results),
        quality=quality,
        warnings=tuple(warnings),
        baseline=baseline.name if baseline else "",
    )
    json_path, md_path = await asyncio.to_thread(artifacts.save_report, req.reports_dir, report)
    flagged = sum(1 for r in results if r.flags)
    yield SweepFinished(
        op=OP,
        lane=req.lane,
        cluster=req.cluster,
        ok=not any(r.skipped for r in results),
        summary=f"{len(results)} points, {flagged} flagged → {json_path}",
        report_json=str(json_path),
        report_md=str(md_path),
    )


async def run_quality(req: BenchRequest, model: str) -> tuple[Quality | None, str]:
    """Run tool-eval-bench's quality part; (score, a note when it could not be measured)."""
    exe = shutil.which(req.quality_exe)
    if exe is None:
        return None, f"quality not measured: {req.quality_exe} is not installed"
    out_dir = req.reports_dir / f".tool-eval-bench-{artifacts.safe_label(req.label)}"
    argv = quality_argv(req.endpoint, model, req.label, out_dir, exe=exe)
    out_dir.mkdir(parents=True, exist_ok=True)
    # Run inside its output folder: tool-eval-bench keeps a data/benchmarks.sqlite in its cwd.
    proc = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, cwd=out_dir
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
