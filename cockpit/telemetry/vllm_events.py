"""What a vLLM log line tells: the events `parse_event` recognises in a line's message (engine
stats, spec-decode stats, the boot's phases and their progress, failures and hang hints).

Its own module because the line split (`vllm_log`) is asked of every line of a flood (the store,
the severity classifier), the events only by the boot tracker (`boot`).

The b12x kernel autotune (first boot of a lane; the compile cache is per model) is not printed by
upstream vLLM. The cockpit defines its lines, which the simulator prints and this module accepts:

    [b12x] autotune: candidate 17/394 (<free text, e.g. kernel and tile>)
    [b12x] autotune: done, 394 candidates in 812.4 s
    [b12x] autotune: selection cache hit, 394 candidates skipped

They may carry the usual vLLM prefix (`(Worker_TP0 pid=7) INFO ... [b12x.py:88] [b12x] ...`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from cockpit.telemetry.vllm_log import LogLine, parse_log_line


@dataclass(frozen=True)
class EngineStats:
    """The periodic `Engine 000: Avg prompt throughput: ...` line (percentages as printed)."""

    engine: int | None
    engines_aggregated: int | None
    prompt_tps: float
    generation_tps: float
    running: int | None
    waiting: int | None
    deferred: int | None
    preemptions: int | None
    kv_device: str | None  # "GPU" or "CPU"
    kv_usage_pct: float | None
    prefix_hit_pct: float | None
    external_prefix_hit_pct: float | None
    mm_hit_pct: float | None


@dataclass(frozen=True)
class SpecDecodeStats:
    """The `SpecDecoding metrics: ...` line."""

    mean_acceptance_length: float | None
    accepted_tps: float | None
    drafted_tps: float | None
    accepted: int | None
    drafted: int | None
    per_position: tuple[float, ...]
    avg_acceptance_pct: float | None


@dataclass(frozen=True)
class WeightsProgress:
    percent: float
    done: int
    total: int


@dataclass(frozen=True)
class WeightsLoaded:
    seconds: float


@dataclass(frozen=True)
class ModelLoaded:
    gib: float
    seconds: float


@dataclass(frozen=True)
class AutotuneProgress:
    done: int
    total: int
    detail: str | None


@dataclass(frozen=True)
class AutotuneDone:
    candidates: int
    seconds: float | None
    cached: bool  # True: the selection cache hit, nothing was tuned


@dataclass(frozen=True)
class KvCacheMemory:
    gib: float


@dataclass(frozen=True)
class KvCacheSize:
    tokens: int
    device: str | None
    max_concurrency: float | None = None
    tokens_per_request: int | None = None


@dataclass(frozen=True)
class MaxConcurrency:
    tokens_per_request: int
    factor: float


@dataclass(frozen=True)
class GraphCaptureProgress:
    label: str | None  # e.g. "mixed prefill-decode, PIECEWISE"
    percent: float
    done: int
    total: int


@dataclass(frozen=True)
class GraphCaptureDone:
    seconds: float
    gib: float


@dataclass(frozen=True)
class EngineInitDone:
    seconds: float


@dataclass(frozen=True)
class CompileStarted:
    """torch.compile's warm-up begins (a minute on 2 CPU cores before the KV pool is made)."""


@dataclass(frozen=True)
class CompileDone:
    """torch.compile's warm-up ended (`seconds` when the line says how long it took)."""

    seconds: float | None = None


@dataclass(frozen=True)
class ServerStarting:
    url: str


@dataclass(frozen=True)
class StartupComplete:
    pass


@dataclass(frozen=True)
class ErrorLine:
    """A failure marker; `kind` ranks how decisive it is (exception/timeout > error > traceback)."""

    kind: Literal["traceback", "error", "exception", "timeout"]
    text: str


@dataclass(frozen=True)
class HangHint:
    seconds: int
    text: str


VllmEvent = (
    EngineStats
    | SpecDecodeStats
    | WeightsProgress
    | WeightsLoaded
    | ModelLoaded
    | AutotuneProgress
    | AutotuneDone
    | KvCacheMemory
    | KvCacheSize
    | MaxConcurrency
    | GraphCaptureProgress
    | GraphCaptureDone
    | EngineInitDone
    | CompileStarted
    | CompileDone
    | ServerStarting
    | StartupComplete
    | ErrorLine
    | HangHint
)

_NUM = r"([\d.]+)"
_INT = r"(\d[\d,]*)"


def _field(pattern: str, text: str) -> str | None:
    match = re.search(pattern, text)
    return match.group(1) if match else None


def _f(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _i(value: str | None) -> int | None:
    try:
        return int(value.replace(",", "")) if value is not None else None
    except ValueError:
        return None


def _stats(msg: str) -> EngineStats | None:
    prompt = _f(_field(r"Avg prompt throughput: " + _NUM, msg))
    gen = _f(_field(r"Avg generation throughput: " + _NUM, msg))
    if prompt is None or gen is None:
        return None
    return EngineStats(
        engine=_i(_field(r"Engine (\d+):", msg)),
        engines_aggregated=_i(_field(r"(\d+) Engines Aggregated:", msg)),
        prompt_tps=prompt,
        generation_tps=gen,
        running=_i(_field(r"Running: (\d+) reqs", msg)),
        waiting=_i(_field(r"Waiting: (\d+) reqs", msg)),
        deferred=_i(_field(r"Deferred: (\d+) reqs", msg)),
        preemptions=_i(_field(r"Preemptions: (\d+)", msg)),
        kv_device=_field(r"(\w+) KV cache usage:", msg),
        kv_usage_pct=_f(_field(r"KV cache usage: " + _NUM + "%", msg)),
        prefix_hit_pct=_f(_field(r"(?<!External )Prefix cache hit rate: " + _NUM + "%", msg)),
        external_prefix_hit_pct=_f(_field(r"External prefix cache hit rate: " + _NUM + "%", msg)),
        mm_hit_pct=_f(_field(r"MM cache hit rate: " + _NUM + "%", msg)),
    )


def _spec(msg: str) -> SpecDecodeStats:
    per_pos = _field(r"Per-position acceptance rate: ([\d.,\s]*?)(?:, Avg|$)", msg) or ""
    return SpecDecodeStats(
        mean_acceptance_length=_f(_field(r"Mean acceptance length: " + _NUM, msg)),
        accepted_tps=_f(_field(r"Accepted throughput: " + _NUM, msg)),
        drafted_tps=_f(_field(r"Drafted throughput: " + _NUM, msg)),
        accepted=_i(_field(r"Accepted: (\d+) tokens", msg)),
        drafted=_i(_field(r"Drafted: (\d+) tokens", msg)),
        per_position=tuple(float(p) for p in re.findall(r"\d+(?:\.\d+)?", per_pos)),
        avg_acceptance_pct=_f(_field(r"Avg Draft acceptance rate: " + _NUM + "%", msg)),
    )


_SIMPLE: list[tuple[re.Pattern[str], type]] = [
    (re.compile(r"Loading weights took " + _NUM + " s"), WeightsLoaded),
    (
        re.compile(r"Model loading took " + _NUM + r" GiB (?:memory )?and " + _NUM + " s"),
        ModelLoaded,
    ),
    (re.compile(r"Available KV cache memory: " + _NUM + " GiB"), KvCacheMemory),
    (
        re.compile(r"Graph capturing finished in " + _NUM + r" secs?, took " + _NUM + " GiB"),
        GraphCaptureDone,
    ),
    (
        re.compile(r"init engine \(profile, create kv cache, warmup model\) took " + _NUM),
        EngineInitDone,
    ),
]
_WEIGHTS_RE = re.compile(r"Loading \w+ checkpoint shards:\s*(\d+)%\s*Completed\s*\|\s*(\d+)/(\d+)")
_GRAPH_RE = re.compile(
    r"Capturing CUDA graphs?(?: \((?P<label>[^)]*)\)| shapes)?:\s*(?P<pct>\d+)%\|[^|]*\|\s*"
    r"(?P<done>\d+)/(?P<total>\d+)"
)
_KV_SIZE_RE = re.compile(r"(?:(\w+) )?KV cache size: " + _INT + " tokens")
_CONCURRENCY_RE = re.compile(r"Maximum concurrency for " + _INT + r" tokens per request: " + _NUM)
_AUTOTUNE_RE = re.compile(r"\[b12x\] autotune: candidate (\d+)/(\d+)(?:\s+\((.*)\))?")
_AUTOTUNE_DONE_RE = re.compile(r"\[b12x\] autotune: done, (\d+) candidates in " + _NUM + " s")
_AUTOTUNE_CACHED_RE = re.compile(r"\[b12x\] autotune: selection cache hit, (\d+) candidates")
_SERVER_RE = re.compile(r"Starting vLLM (?:API )?server(?: \d+)? on (\S+)")
# vLLM's model runners: the CPU one says "Warming up model for the compilation..." / "Warming up
# done."; the GPU one "Dynamo bytecode transform time: X s" and "torch.compile takes X s in total"
_COMPILE_START_RE = re.compile(
    r"Warming up model for the compilation|Dynamo bytecode transform time|Start compiling"
)
_COMPILE_DONE_RE = re.compile(r"Warming up done\.|torch\.compile takes ([\d.]+) s in total")
_HANG_RE = re.compile(r"No available shared memory broadcast block found in (\d+) second")
# the last line of a traceback: `ValueError: …`, `torch.OutOfMemoryError: …`, `KeyboardInterrupt`
EXCEPTION_RE = re.compile(
    r"^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit)(?::\s|$)"
)
TIMEOUT_RE = re.compile(r"Watchdog caught collective operation timeout|NCCL timeout")


def _failure(log: LogLine) -> ErrorLine | None:
    msg = log.message.strip()
    if TIMEOUT_RE.search(msg):
        return ErrorLine("timeout", msg)
    if not msg or log.message[:1].isspace() or log.level in ("DEBUG", "INFO", "WARNING"):
        return None  # traceback frames and source lines are indented; only their ends decide
    if msg.startswith("Traceback (most recent call last)"):
        return ErrorLine("traceback", msg)
    if EXCEPTION_RE.match(msg):
        return ErrorLine("exception", msg)
    return ErrorLine("error", msg) if log.level in ("ERROR", "CRITICAL") else None


def parse_event(line: str | LogLine) -> VllmEvent | None:
    """The event a line carries, or None for any other line (including garbage)."""
    log = line if isinstance(line, LogLine) else parse_log_line(line)
    msg = log.message
    if "Avg prompt throughput" in msg:
        return _stats(msg)
    if "SpecDecoding metrics:" in msg:
        return _spec(msg)
    if match := _WEIGHTS_RE.search(msg):
        return WeightsProgress(float(match.group(1)), int(match.group(2)), int(match.group(3)))
    if match := _GRAPH_RE.search(msg):
        return GraphCaptureProgress(
            match.group("label"),
            float(match.group("pct")),
            int(match.group("done")),
            int(match.group("total")),
        )
    if "[b12x] autotune:" in msg:
        if match := _AUTOTUNE_RE.search(msg):
            return AutotuneProgress(int(match.group(1)), int(match.group(2)), match.group(3))
        if match := _AUTOTUNE_DONE_RE.search(msg):
            return AutotuneDone(int(match.group(1)), float(match.group(2)), cached=False)
        if match := _AUTOTUNE_CACHED_RE.search(msg):
            return AutotuneDone(int(match.group(1)), None, cached=True)
    for pattern, kind in _SIMPLE:
        if match := pattern.search(msg):
            return kind(*(float(g) for g in match.groups()))
    if match := _KV_SIZE_RE.search(msg):
        tokens = _i(match.group(2)) or 0
        conc = _CONCURRENCY_RE.search(msg)
        if conc:
            return KvCacheSize(tokens, match.group(1), float(conc.group(2)), _i(conc.group(1)))
        return KvCacheSize(tokens, match.group(1))
    if match := _CONCURRENCY_RE.search(msg):
        return MaxConcurrency(_i(match.group(1)) or 0, float(match.group(2)))
    if match := _SERVER_RE.search(msg):
        return ServerStarting(match.group(1))
    if "Application startup complete" in msg:
        return StartupComplete()
    if match := _COMPILE_DONE_RE.search(msg):
        return CompileDone(_f(match.group(1)))
    if _COMPILE_START_RE.search(msg):
        return CompileStarted()
    if match := _HANG_RE.search(msg):
        return HangHint(int(match.group(1)), msg.strip())
    return _failure(log)
