"""The measurement method, identical to llama-benchy 0.4.0's so our numbers compare with theirs.

Definitions (llama-benchy `client.py` / `results.py`):

- per request: `ttfr` = first chunk with choices − send; `e2e_ttft` = first content chunk − send;
  `est_ppt` = max(0, ttfr − latency); pp t/s = prompt tokens / est_ppt, where prompt tokens are
  the usage figure when within 20 % of the expected count, else the expected count (so a warm
  context + prompt request counts the prompt only); tg t/s = tokens after the first token's
  timestamp / (last − first token timestamp);
- a chunk carrying several `token_ids` spreads its tokens evenly since the previous token; without
  token ids the usage count is spread evenly between the first and the last content chunk;
- per batch (c > 1, the "total" figures the seed quotes): pp = Σ prompt tokens / (latest first
  token − earliest send); tg = Σ decode tokens / (latest last token − earliest first token);
- over runs: mean and population standard deviation (numpy's default, llama-benchy's choice);
  for c = 1 the total equals the per-request figure.

Times are whatever clock the caller used, as long as it is one clock; the driver feeds engine
time (wall time × the simulator's speed) so reported rates are in the engine's units.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from cockpit.telemetry.histogram import Histogram


@dataclass
class RequestTiming:
    """What the client saw of one streamed request."""

    start: float
    expected_prompt_tokens: int
    end: float = 0.0
    first_response: float | None = None
    first_token: float | None = None
    usage_prompt_tokens: int = 0
    usage_completion_tokens: int | None = None
    token_times: list[float] = field(default_factory=list)
    chunk_times: list[float] = field(default_factory=list)
    chunk_token_ids: list[int | None] = field(default_factory=list)
    total_tokens: int = 0
    error: str | None = None

    def content_chunk(self, at: float, token_ids: int | None) -> None:
        """A chunk with content arrived at `at`; `token_ids` is its token-id count if sent."""
        if self.first_token is None:
            self.first_token = at
        self.chunk_times.append(at)
        self.chunk_token_ids.append(token_ids)

    def finalize(self, end: float) -> None:
        """Turn content chunks into token timestamps (llama-benchy's `_finalize_stream_tokens`)."""
        self.end = end
        self.token_times, self.total_tokens = token_timestamps(
            self.chunk_times, self.chunk_token_ids, self.usage_completion_tokens, self.first_token
        )

    @property
    def prompt_tokens(self) -> int:
        """Usage when it is within 20 % of what we sent, else what we sent."""
        expected = self.expected_prompt_tokens
        if (
            self.usage_prompt_tokens > 0
            and abs(self.usage_prompt_tokens - expected) < expected * 0.2
        ):
            return self.usage_prompt_tokens
        return expected

    @property
    def decode_tokens(self) -> int:
        if len(self.token_times) < 2:
            return 0
        return sum(1 for t in self.token_times if t > self.token_times[0])


def token_timestamps(
    chunk_times: Sequence[float],
    chunk_token_ids: Sequence[int | None],
    usage_completion: int | None,
    first_token: float | None,
) -> tuple[list[float], int]:
    """Token timestamps and token count of one stream from its content chunks."""
    if not chunk_times:
        return [], usage_completion or 0
    if all(n is not None for n in chunk_token_ids):
        times: list[float] = []
        for at, count in zip(chunk_times, chunk_token_ids, strict=True):
            assert count is not None
            if count <= 0:
                continue
            if count == 1:
                times.append(at)
                continue
            last = times[-1] if times else first_token if first_token is not None else at
            times.extend(last + (at - last) * (i + 1) / count for i in range(count))
        return times, len(times)
    count = usage_completion if usage_completion is not None else len(chunk_times)
    if usage_completion is None:
        return list(chunk_times), count
    return _spread(chunk_times[0], chunk_times[-1], count), count


def _spread(first: float, last: float, count: int) -> list[float]:
    if count <= 0:
        return []
    if count == 1 or last <= first:
        return [first] * count
    step = (last - first) / (count - 1)
    return [first + step * i for i in range(count)]


@dataclass(frozen=True)
class Stat:
    """Mean ± population std over runs, with the raw values."""

    mean: float
    std: float
    values: tuple[float, ...]

    @classmethod
    def of(cls, values: Sequence[float]) -> Stat | None:
        if not values:
            return None
        return cls(statistics.fmean(values), statistics.pstdev(values), tuple(values))

    def scaled(self, factor: float) -> Stat:
        return Stat(self.mean * factor, self.std * factor, tuple(v * factor for v in self.values))

    def __str__(self) -> str:
        return spread_text(self)


def spread_text(stat: Stat, digits: int = 1) -> str:
    """`mean ± std`, or the mean alone for one value (a single run has no spread to show)."""
    if len(stat.values) <= 1:
        return f"{stat.mean:,.{digits}f}"
    return f"{stat.mean:,.{digits}f} ± {stat.std:,.{digits}f}"


@dataclass(frozen=True)
class PhaseStats:
    """One phase (inference, or a warm point's context load) of one point over its runs.

    `pp`/`tg` are batch totals for c > 1 (the per-request figures for c = 1); times in ms.
    """

    concurrency: int
    pp: Stat | None
    pp_req: Stat | None
    tg: Stat | None
    tg_req: Stat | None
    ttfr_ms: Stat | None
    est_ppt_ms: Stat | None
    e2e_ttft_ms: Stat | None
    requests: int
    errors: int
    dropped: int = 0  # runs left out as faster than physics (`implausible_runs`)


def phase_stats(
    batches: Sequence[Sequence[RequestTiming]],
    latency: float,
    concurrency: int,
    dropped: int = 0,
) -> PhaseStats:
    """Aggregate the runs (one batch of `concurrency` requests each) of one phase.

    `dropped`: how many runs the caller left out of `batches` (counted, never averaged).
    """
    pp_req: list[float] = []
    tg_req: list[float] = []
    ttfr: list[float] = []
    est_ppt: list[float] = []
    e2e: list[float] = []
    pp_batch: list[float] = []
    tg_batch: list[float] = []
    requests = errors = 0
    for batch in batches:
        requests += len(batch)
        valid = [r for r in batch if r.error is None]
        errors += len(batch) - len(valid)
        if not valid:
            continue
        for r in valid:
            ppt = 0.0
            if r.first_response is not None:
                ttfr.append(r.first_response - r.start)
            if r.first_token is not None:
                e2e.append(r.first_token - r.start)
                responded = r.first_response if r.first_response is not None else r.first_token
                ppt = max(0.0, responded - r.start - latency)
                est_ppt.append(ppt)
            if ppt > 0:
                pp_req.append(r.prompt_tokens / ppt)
            if r.total_tokens > 1 and len(r.token_times) > 1:
                span = r.token_times[-1] - r.token_times[0]
                if span > 0 and r.decode_tokens > 0:
                    tg_req.append(r.decode_tokens / span)
        firsts = [r.first_token for r in valid if r.first_token is not None]
        if not firsts:
            continue
        pp_span = max(firsts) - min(r.start for r in valid)
        if pp_span > 0:
            pp_batch.append(sum(r.prompt_tokens for r in valid) / pp_span)
        lasts = [r.token_times[-1] if r.token_times else r.end for r in valid]
        tg_span = max(lasts) - min(firsts)
        decoded = sum(r.decode_tokens for r in valid)
        if tg_span > 0 and decoded > 0:
            tg_batch.append(decoded / tg_span)
    per_req_pp, per_req_tg = Stat.of(pp_req), Stat.of(tg_req)
    return PhaseStats(
        concurrency=concurrency,
        pp=Stat.of(pp_batch) if concurrency > 1 else per_req_pp,
        pp_req=per_req_pp,
        tg=Stat.of(tg_batch) if concurrency > 1 else per_req_tg,
        tg_req=per_req_tg,
        ttfr_ms=_ms(Stat.of(ttfr)),
        est_ppt_ms=_ms(Stat.of(est_ppt)),
        e2e_ttft_ms=_ms(Stat.of(e2e)),
        requests=requests,
        errors=errors,
        dropped=dropped,
    )


def stream_rates(batch: Sequence[RequestTiming]) -> list[float]:
    """Each valid stream's tg t/s in one batch (decode tokens / decode span)."""
    rates = []
    for r in batch:
        if r.error is None and len(r.token_times) > 1:
            span = r.token_times[-1] - r.token_times[0]
            if span > 0 and r.decode_tokens > 0:
                rates.append(r.decode_tokens / span)
    return rates


MEDIAN_FACTOR = 10.0
"""A stream decoding more than this many times the point's median is a burst, not decode."""
BOUND_MARGIN = 1.5
"""A stream may read this much above the decode rate the engine measured, never more: a client's
decode window is shorter than the engine's by its first token's relay delay, a few per cent on a
warm lane. A relay that holds the first token while the engine decodes on (the first request
after a boot) reads 1.5-2.5× fast with every token in its own read: a margin of 3× let it stand."""


def implausible_runs(
    runs: Sequence[Sequence[float]], decode_bounds: Sequence[float | None]
) -> dict[int, str]:
    """Runs whose decode is faster than physics, each with why (run index → reason).

    `runs`: per run, each stream's tg t/s; `decode_bounds`: per run, the fastest per-stream
    decode rate the engine's own counters allow (`Counters.decode_bound_since`), None when
    unknown.
    A run is implausible when a stream beats `MEDIAN_FACTOR` × the point's median stream rate
    (several SSE chunks arrived in one read and made a microsecond "decode"), or
    `BOUND_MARGIN` × the engine's own rate: the client cannot see tokens faster than the engine
    made them.
    """
    rates = [r for run in runs for r in run]
    if not rates:
        return {}
    median = statistics.median(rates)
    out: dict[int, str] = {}
    for index, run in enumerate(runs):
        if not run:
            continue
        fastest = max(run)
        bound = decode_bounds[index] if index < len(decode_bounds) else None
        if math.isinf(fastest):
            out[index] = "a stream's decode tokens arrived all at once (no time between them)"
        elif median > 0 and fastest > MEDIAN_FACTOR * median:
            out[index] = (
                f"a stream decoded {fastest:,.0f} t/s, {fastest / median:.0f}× the point's "
                f"median {median:,.1f}"
            )
        elif bound is not None and fastest > BOUND_MARGIN * bound:
            out[index] = (
                f"a stream decoded {fastest:,.0f} t/s where the engine's own time per output "
                f"token allows {bound:,.1f}"
            )
    return out


def decode_bound(tpot_sum: float | None, tpot_count: float | None) -> float | None:
    """Per-stream tokens/s the engine's own time-per-output-token histogram implies."""
    if not tpot_sum or not tpot_count or tpot_sum <= 0 or tpot_count <= 0:
        return None
    return tpot_count / tpot_sum


def fastest_decode(tpot: Histogram) -> float | None:
    """The fastest per-stream decode the time per output token of a batch's requests allows.

    One request: 1 / its time per token. Several: their mean is the bound of none of them (at c2
    cold one stream stalls behind the other's prefill, the other decodes clean), so 1 / the
    histogram's floor (no request took less per token). When the floor is 0 (a request in the
    lowest bucket, a fast engine: the real CPU lane's 3 ms) nothing bounds the fastest one, and
    the mean stands in: without it a burst at c2 on such a lane reads 3,000 t/s (measured).
    """
    floor = tpot.floor if tpot.count > 1 else None
    return 1.0 / floor if floor else decode_bound(tpot.sum, tpot.count)


def _ms(stat: Stat | None) -> Stat | None:
    return stat.scaled(1000.0) if stat is not None else None


def relative_delta(new: float | None, old: float | None) -> float | None:
    """(new − old) / old, None when either is missing or old is zero."""
    if new is None or old is None or old == 0 or math.isnan(old):
        return None
    return (new - old) / old
