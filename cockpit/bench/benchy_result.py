"""llama-benchy's `--save-result` JSON as our phase figures, and the runs a check left out.

Apart from the driver so the parsing is tested on captured results: rates and times come back
in engine units (divided and multiplied by the simulator's time scale).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from cockpit.bench.method import PhaseStats, Stat


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
    """`stat` without the values of the runs in `bad` (one value per run, or per request).
    Values that cannot be told apart by run (llama-benchy left out a stream it could not time)
    are all dropped: kept, a burst's 14,260 t/s stood as the tg of a point whose 3 runs were
    all dropped as faster than physics."""
    if stat is None or not bad:
        return stat
    values = stat.values
    if not values or len(values) % runs:
        return None
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


def read_result(
    path: Path, scale: float, runs: int
) -> dict[tuple[int, int, int, int], tuple[PhaseStats | None, PhaseStats | None]]:
    try:
        return parse_benchy_result(json.loads(path.read_text()), scale, runs)
    except (OSError, ValueError, KeyError, TypeError):
        return {}
