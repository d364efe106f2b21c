"""vLLM container log lines → typed records and recognised events.

Line shapes accepted (ANSI colours, a `docker logs --timestamps` prefix and tqdm's `\\r` redraws are
tolerated):

- `(APIServer pid=1) INFO 11-29 19:05:30 [loggers.py:335] msg` and the same without the process
  tag; older builds without the opening bracket (`INFO 12-19 22:58:27 model_runner.py:1415] msg`);
- uvicorn's `INFO:     Application startup complete.` and its access lines
  (`INFO:     127.0.0.1:53918 - "GET /metrics HTTP/1.1" 200 OK`, see `routine_access`);
- torch/c10's `[rank1]:[E1129 19:05:30.123456 ProcessGroupNCCL.cpp:616] msg`;
- anything else is a bare line (tqdm bars, tracebacks) with level None.

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

_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_DOCKER_TS_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)\s")
_PROC_RE = re.compile(r"^\((?P<proc>[^()\s]+) pid=(?P<pid>\d+)\)\s?")
_VLLM_RE = re.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+"
    r"(?P<ts>\d\d-\d\d \d\d:\d\d:\d\d)(?:\.\d+)?\s+\[?(?P<src>[^\]\s]+:\d+)\]\s?(?P<msg>.*)$"
)
_UVICORN_RE = re.compile(r"^(?P<level>INFO|WARNING|ERROR|CRITICAL|DEBUG):\s+(?P<msg>.*)$")
_C10_RE = re.compile(
    r"^(?:\[rank\d+\]:)?\[(?P<lvl>[IWEF])(?P<ts>\d{4} \d\d:\d\d:\d\d)(?:\.\d+)?\s+"
    r"(?P<src>[^\]]+)\]\s?(?P<msg>.*)$"
)
_C10_LEVELS = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "CRITICAL"}


@dataclass(frozen=True)
class LogLine:
    """One log line split into its parts; `level` is None for bare lines (tqdm, tracebacks)."""

    raw: str
    message: str
    level: str | None = None
    timestamp: str | None = None
    source: str | None = None
    process: str | None = None
    pid: int | None = None


def clean(line: str) -> str:
    """Drop ANSI colours, the docker timestamp and all but the last tqdm `\\r` redraw."""
    text = _ANSI_RE.sub("", line.rstrip("\r\n"))
    if "\r" in text:
        parts = [p for p in text.split("\r") if p.strip()]
        text = parts[-1] if parts else ""
    return _DOCKER_TS_RE.sub("", text)


def parse_log_line(line: str) -> LogLine:
    """Split a vLLM log line; never fails (an unknown shape is a bare line)."""
    text = clean(line)
    process = pid = None
    proc = _PROC_RE.match(text)
    if proc:
        process, pid = proc.group("proc"), int(proc.group("pid"))
        text = text[proc.end() :]
    if match := _VLLM_RE.match(text):
        level = "WARNING" if match.group("level") == "WARN" else match.group("level")
        return LogLine(
            line, match.group("msg"), level, match.group("ts"), match.group("src"), process, pid
        )
    if match := _UVICORN_RE.match(text):
        return LogLine(line, match.group("msg"), match.group("level"), None, None, process, pid)
    if match := _C10_RE.match(text):
        level = _C10_LEVELS[match.group("lvl")]
        return LogLine(
            line, match.group("msg"), level, match.group("ts"), match.group("src"), process, pid
        )
    return LogLine(line, text, None, None, None, process, pid)


_ACCESS_RE = re.compile(r'^(?:\S+ )?- "[A-Z]+ \S+ HTTP/[\d.]+" (?P<status>\d{3})\b')


def routine_access(line: str) -> bool:
    """Whether `line` is uvicorn's access line of a request that succeeded (status < 400).

    Under load these are most of an engine's log (the cockpit's own `/metrics` scrapes, health
    checks, every bench request) and bury its `Engine 000:` stats, so the Log pane folds them. A
    failed request's line (4xx, 5xx) is not routine: it stays in view. Accepts every shape
    `parse_log_line` does (vLLM's process tag, a docker timestamp, ANSI colours)."""
    if " HTTP/" not in line:
        return False  # the cheap test first: the TUI's store runs every log line through here
    log = parse_log_line(line)
    if log.level is None or log.source is not None:  # not uvicorn's own `LEVEL:     …` shape
        return False
    match = _ACCESS_RE.match(log.message)
    return match is not None and int(match.group("status")) < 400


# --- events -------------------------------------------------------------------------------------


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
