"""Boot progress of one vLLM rank, reduced from its log lines.

`advance(state, line)` is a pure reducer: feed every line of a rank's log (from the start) and read
the phase, the progress within it and the figures the boot printed (weights %, b12x autotune n/N,
CUDA graph capture %, KV pool tokens and GiB). Failure is terminal during boot and keeps the most
decisive line: an exception line (`ValueError: ...`) or an NCCL timeout beats an ERROR log line,
which beats a bare `Traceback` header; the first of the best kind wins, as vLLM prints the root
cause first. After READY, later errors are kept in `last_error` but do not change the phase.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from cockpit.telemetry import vllm_events as v


class BootPhase(StrEnum):
    STARTING = "starting"
    LOADING_WEIGHTS = "loading weights"
    AUTOTUNE = "autotune"
    PROFILING = "profiling"  # weights loaded: the profile run, inside which torch.compile runs
    COMPILING = "torch.compile warm-up"
    CAPTURING_GRAPHS = "capturing graphs"
    STARTING_SERVER = "starting server"
    READY = "ready"
    FAILED = "failed"


_RANK = {"traceback": 0, "error": 1, "exception": 2, "timeout": 2}


@dataclass(frozen=True)
class BootState:
    """What a rank's log said so far; `percent` is the progress within `phase`, when known."""

    phase: BootPhase = BootPhase.STARTING
    percent: float | None = None
    weights_pct: float | None = None
    weights_seconds: float | None = None
    model_gib: float | None = None
    autotune_done: int | None = None
    autotune_total: int | None = None
    autotune_cached: bool = False
    kv_cache_gib: float | None = None
    kv_pool_tokens: int | None = None
    max_concurrency: float | None = None
    graph_label: str | None = None
    graph_pct: float | None = None
    graph_seconds: float | None = None
    compile_seconds: float | None = None
    init_seconds: float | None = None
    server_url: str | None = None
    failed_line: str | None = None
    failed_kind: str | None = None
    last_error: str | None = None
    hang_hint: str | None = None

    @property
    def ready(self) -> bool:
        return self.phase is BootPhase.READY

    @property
    def failed(self) -> bool:
        return self.phase is BootPhase.FAILED


def _on_error(state: BootState, event: v.ErrorLine) -> BootState:
    state = replace(state, last_error=event.text)
    if state.phase is BootPhase.READY:
        return state
    if state.failed_kind is not None and _RANK[event.kind] <= _RANK[state.failed_kind]:
        return state
    return replace(
        state,
        phase=BootPhase.FAILED,
        percent=None,
        failed_line=event.text,
        failed_kind=event.kind,
    )


def advance(state: BootState, line: str) -> BootState:
    """The state after one more log line; unrelated or garbage lines leave it unchanged."""
    event = v.parse_event(line)
    if event is None:
        return state
    if isinstance(event, v.ErrorLine):
        return _on_error(state, event)
    if isinstance(event, v.HangHint):
        if state.phase is BootPhase.COMPILING:
            return state  # the engine waits on the compiling worker: its minute is expected
        return replace(state, hang_hint=event.text)
    if state.phase in (BootPhase.FAILED, BootPhase.READY):
        return state
    match event:
        case v.WeightsProgress(percent=pct):
            return replace(state, phase=BootPhase.LOADING_WEIGHTS, percent=pct, weights_pct=pct)
        case v.WeightsLoaded(seconds=s):
            return replace(
                state, phase=BootPhase.PROFILING, percent=None, weights_pct=100.0, weights_seconds=s
            )
        case v.ModelLoaded(gib=gib):
            return replace(
                state, phase=BootPhase.PROFILING, percent=None, model_gib=gib, weights_pct=100.0
            )
        case v.AutotuneProgress(done=n, total=total):
            return replace(
                state,
                phase=BootPhase.AUTOTUNE,
                percent=100.0 * n / total if total else None,
                autotune_done=n,
                autotune_total=total,
            )
        case v.AutotuneDone(candidates=n, cached=cached):
            return replace(
                state,
                phase=BootPhase.PROFILING,
                percent=None,
                autotune_done=n,
                autotune_total=n,
                autotune_cached=cached,
            )
        case v.KvCacheMemory(gib=gib):
            return replace(state, phase=BootPhase.PROFILING, percent=None, kv_cache_gib=gib)
        case v.KvCacheSize(tokens=tokens, max_concurrency=conc):
            return replace(
                state,
                phase=BootPhase.PROFILING,
                percent=None,
                kv_pool_tokens=tokens,
                max_concurrency=conc if conc is not None else state.max_concurrency,
            )
        case v.MaxConcurrency(factor=factor):
            return replace(state, max_concurrency=factor)
        case v.GraphCaptureProgress(label=label, percent=pct):
            return replace(
                state,
                phase=BootPhase.CAPTURING_GRAPHS,
                percent=pct,
                graph_label=label,
                graph_pct=pct,
            )
        case v.GraphCaptureDone(seconds=s):
            return replace(
                state, phase=BootPhase.PROFILING, percent=None, graph_pct=100.0, graph_seconds=s
            )
        case v.CompileStarted():
            return replace(state, phase=BootPhase.COMPILING, percent=None)
        case v.CompileDone(seconds=s):
            return replace(
                state,
                phase=BootPhase.PROFILING,
                percent=None,
                compile_seconds=s if s is not None else state.compile_seconds,
            )
        case v.EngineInitDone(seconds=s):
            return replace(state, phase=BootPhase.STARTING_SERVER, percent=None, init_seconds=s)
        case v.ServerStarting(url=url):
            return replace(state, phase=BootPhase.STARTING_SERVER, percent=None, server_url=url)
        case v.StartupComplete():
            return replace(state, phase=BootPhase.READY, percent=100.0)
    return state


class BootTracker:
    """Convenience holder around `advance` for one rank's line stream (not thread-safe)."""

    def __init__(self) -> None:
        self.state = BootState()

    def feed(self, line: str) -> BootState:
        self.state = advance(self.state, line)
        return self.state
