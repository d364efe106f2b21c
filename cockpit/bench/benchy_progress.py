"""llama-benchy's `--emit-progress` JSON lines, grouped per point into its requests and runs.

Apart from the driver so the parsing is tested on captured lines, without a process: each
request's wall timestamps give its decode rate and each measured batch's decode window, which
the honesty checks hold against the engine's own counters.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from cockpit.bench import honesty
from cockpit.bench.judge import READ_GAP_S, StreamReads, reads_of
from cockpit.bench.models import PointSpec

PROGRESS_SCHEMA = "llama-benchy-progress.v1"


def parse_progress_line(line: str) -> dict[str, Any] | None:
    """One llama-benchy progress event, None for anything else."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("schema") != PROGRESS_SCHEMA:
        return None
    return data


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


def decode_windows(tracker: ProgressTracker) -> list[tuple[tuple[float, float], float] | None]:
    """Per measured batch: ((earliest first token, latest end), first-token stagger), wall s;
    None for a batch without a decode window."""
    return [
        honesty.decode_window(
            [r.first_token for r in batch if r.first_token is not None],
            [r.end for r in batch if r.end is not None],
        )
        for batch in tracker.inference_batches()
    ]


def stream_reads(tracker: ProgressTracker) -> list[list[StreamReads]]:
    """Per measured batch, how each stream's tokens reached llama-benchy: its progress events
    stamp each chunk, the chunks of one read microseconds apart (`judge.READ_GAP_S`)."""
    return [
        [reads_of(r.chunks, READ_GAP_S) for r in batch] for batch in tracker.inference_batches()
    ]
