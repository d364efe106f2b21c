"""vLLM-format log lines of the simulated engine (pure: strings from values and a timestamp).

Every line a rank prints goes through `line()`: `(PROC pid=N) LEVEL MM-DD HH:MM:SS [file.py:N] msg`,
as vLLM 0.32 prints them (see shared/reference/vllm-0.32-cpu/serve.log). Uvicorn lines are
`INFO:     msg`; tqdm bars are bare lines.

The b12x kernel autotune is not upstream vLLM; its lines are the cockpit's stable format (parsed by
`cockpit.telemetry.vllm_events`), printed by every rank on a first boot of a model on a node:

    (Worker_TP0 pid=N) INFO MM-DD HH:MM:SS [b12x_autotune.py:88] [b12x] autotune: candidate 17/394 (mxfp4_moe_gemm tile=128x64x128 stages=4 split_k=2)
    (Worker_TP0 pid=N) INFO MM-DD HH:MM:SS [b12x_autotune.py:141] [b12x] autotune: done, 394 candidates in 1540.2 s
    (Worker_TP0 pid=N) INFO MM-DD HH:MM:SS [b12x_autotune.py:61] [b12x] autotune: selection cache hit, 394 candidates skipped

The periodic stats line (every 10 s of engine time while there is activity, like vLLM's
LoggingStatLogger at INFO) and the speculative decoding line:

    Engine 000: Avg prompt throughput: 6759.5 tokens/s, Avg generation throughput: 0.8 tokens/s, Running: 1 reqs, Waiting: 1 reqs, GPU KV cache usage: 1.2%, Prefix cache hit rate: 0.0%
    SpecDecoding metrics: Mean acceptance length: 3.12, Accepted throughput: 44.10 tokens/s, Drafted throughput: 104.00 tokens/s, Accepted: 441 tokens, Drafted: 1040 tokens, Per-position acceptance rate: 0.812, 0.633, 0.402, 0.201, 0.071, Avg Draft acceptance rate: 42.4%

`", Preemptions: N"` follows `Waiting` when the window preempted requests.
"""  # noqa: E501

from __future__ import annotations

import time
from collections.abc import Sequence

VLLM_VERSION = "0.32.0"


def stamp(at: float) -> str:
    return time.strftime("%m-%d %H:%M:%S", time.localtime(at))


def line(proc: str, pid: int, level: str, src: str, msg: str, at: float) -> str:
    """One vLLM logger line; `proc` like APIServer, EngineCore or Worker_TP1."""
    return f"({proc} pid={pid}) {level} {stamp(at)} [{src}] {msg}"


def uvicorn(msg: str) -> str:
    return f"INFO:     {msg}"


def access(peer: str, method: str, path: str, status: int, reason: str) -> str:
    return uvicorn(f'{peer} - "{method} {path} HTTP/1.1" {status} {reason}')


def stats_message(
    prompt_tps: float,
    generation_tps: float,
    running: int,
    waiting: int,
    kv_usage: float,
    prefix_hit_rate: float,
    preemptions: int = 0,
) -> str:
    """vLLM's `Engine 000:` stats message; `kv_usage` and `prefix_hit_rate` are fractions."""
    preempt = f", Preemptions: {preemptions}" if preemptions else ""
    return (
        f"Engine 000: Avg prompt throughput: {prompt_tps:.1f} tokens/s, "
        f"Avg generation throughput: {generation_tps:.1f} tokens/s, "
        f"Running: {running} reqs, Waiting: {waiting} reqs{preempt}, "
        f"GPU KV cache usage: {kv_usage * 100:.1f}%, "
        f"Prefix cache hit rate: {prefix_hit_rate * 100:.1f}%"
    )


def spec_message(
    drafts: int, draft_tokens: int, accepted: int, per_pos: Sequence[int], seconds: float
) -> str:
    """vLLM's SpecDecoding metrics message over one logging window."""
    mean_len = 1 + accepted / drafts if drafts else 1.0
    rates = ", ".join(f"{n / drafts:.3f}" if drafts else "0.000" for n in per_pos)
    avg = 100 * accepted / draft_tokens if draft_tokens else 0.0
    return (
        f"SpecDecoding metrics: Mean acceptance length: {mean_len:.2f}, "
        f"Accepted throughput: {accepted / seconds:.2f} tokens/s, "
        f"Drafted throughput: {draft_tokens / seconds:.2f} tokens/s, "
        f"Accepted: {accepted} tokens, Drafted: {draft_tokens} tokens, "
        f"Per-position acceptance rate: {rates}, Avg Draft acceptance rate: {avg:.1f}%"
    )


def tqdm_bar(label: str, done: int, total: int, elapsed: float, unit_s: float) -> str:
    """A tqdm progress line as vLLM's weight loading and graph capture print it."""
    pct = int(100 * done / total) if total else 100
    width = 10
    filled = width * done // total if total else width
    bar = "█" * filled + " " * (width - filled)
    remaining = (total - done) * unit_s
    rate = f"{unit_s:.2f}s/it" if unit_s >= 1 else f"{1 / unit_s if unit_s else 0:.2f}it/s"
    return f"{label}: {pct:3d}%|{bar}| {done}/{total} [{_mmss(elapsed)}<{_mmss(remaining)}, {rate}]"


def shards_bar(done: int, total: int, elapsed: float, unit_s: float) -> str:
    """vLLM's 'Loading safetensors checkpoint shards' line (no bar, percent and count)."""
    pct = int(100 * done / total) if total else 100
    remaining = (total - done) * unit_s
    return (
        f"Loading safetensors checkpoint shards: {pct:3d}% Completed | {done}/{total} "
        f"[{_mmss(elapsed)}<{_mmss(remaining)}, {unit_s:.2f}s/it]"
    )


def _mmss(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60:02d}:{seconds % 60:02d}"
