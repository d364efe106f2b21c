"""The cockpit's own honesty checks on bench points (pure functions over timings and scrapes).

The seed's §3: a c2 depth sweep without prefix warm-up sent two cold ~67K-token prefills at once;
they serialised through the 8192-token chunked scheduler, so one stream "decoded" while its
partner's prefill ran, and the reported tg (13.7 / 5.7 / 2.1 t/s) measured prefill, not decode.
Three independent signs expose it, any one of which flags the point:

- the engine's prompt-token counter moved by at least a prompt's worth during the point's decode
  window (the engine was prefilling while the bench claimed decode);
- requests were waiting during the decode window (admission blocked behind a prefill);
- at c > 1 the streams' first tokens are staggered by more than half the decode window (one
  stream's prefill sat inside the other's decode), seen by the client alone;

plus, across points, a c2 batch tg far below the c1 tg at the same depth.
"""

from __future__ import annotations

from collections.abc import Sequence

from cockpit.bench.method import RequestTiming
from cockpit.bench.models import EngineObservation, Flag, FlagKind, PointResult, PointSpec
from cockpit.telemetry.metrics import EngineMetrics

C2_COLLAPSE_RATIO = 0.5
STAGGER_FRACTION = 0.5
WINDOW_MARGIN = 0.1
COLD_FIX = (
    "measure decode with a warm prefix: drop --cold (the cockpit loads the context first), or "
    "pass --enable-prefix-caching to llama-benchy (tool-eval-bench: "
    '--benchy-args "--enable-prefix-caching")'
)


def decode_window(batch: Sequence[RequestTiming]) -> tuple[float, float] | None:
    """From the earliest first token to the latest last token of a batch (engine seconds)."""
    firsts = [r.first_token for r in batch if r.first_token is not None and r.error is None]
    lasts = [r.token_times[-1] for r in batch if r.token_times and r.error is None]
    if not firsts or not lasts or max(lasts) <= min(firsts):
        return None
    return min(firsts), max(lasts)


def first_token_stagger(batch: Sequence[RequestTiming]) -> float:
    """Seconds between the first and the last stream's first token."""
    firsts = [r.first_token for r in batch if r.first_token is not None and r.error is None]
    return max(firsts) - min(firsts) if len(firsts) > 1 else 0.0


def observe(
    samples: Sequence[EngineMetrics], window: tuple[float, float]
) -> EngineObservation | None:
    """Engine counters over the window, from the scrapes taken inside it (`at` in engine s).

    Only the window's interior counts (a `WINDOW_MARGIN` share is cut at each end): the partner
    streams' own prefills complete at the window's start, a moment too close to tell apart.
    """
    start, end = window
    margin = (end - start) * WINDOW_MARGIN
    inside = [s for s in samples if start + margin <= s.at <= end - margin]
    if not inside:
        return None
    first, last = inside[0], inside[-1]

    def moved(attr: str) -> float | None:
        a, b = getattr(first, attr), getattr(last, attr)
        return b - a if a is not None and b is not None and b >= a else None

    waiting = [s.requests_waiting for s in inside if s.requests_waiting is not None]
    return EngineObservation(
        window_s=end - start,
        prompt_tokens=moved("prompt_tokens"),
        generation_tokens=moved("generation_tokens"),
        max_waiting=max(waiting) if waiting else None,
        samples=len(inside),
    )


def merge_observations(observations: Sequence[EngineObservation]) -> EngineObservation | None:
    """The runs of one point: total window, summed counters, the worst waiting."""
    if not observations:
        return None

    def total(values: list[float | None]) -> float | None:
        present = [v for v in values if v is not None]
        return sum(present) if present else None

    waiting = [o.max_waiting for o in observations if o.max_waiting is not None]
    return EngineObservation(
        window_s=sum(o.window_s for o in observations),
        prompt_tokens=total([o.prompt_tokens for o in observations]),
        generation_tokens=total([o.generation_tokens for o in observations]),
        max_waiting=max(waiting) if waiting else None,
        samples=sum(o.samples for o in observations),
    )


def prefill_in_decode(
    spec: PointSpec, engine: EngineObservation | None, stagger_s: float, window_s: float
) -> Flag | None:
    """Flag a point whose decode window held prefill work (engine or client evidence)."""
    reasons: list[str] = []
    if engine is not None and engine.prompt_tokens is not None and engine.prompt_tokens >= spec.pp:
        reasons.append(
            f"the engine processed {engine.prompt_tokens:,.0f} prompt tokens during the decode "
            f"window ({engine.window_s:.2f} s engine time)"
        )
    if engine is not None and engine.max_waiting:
        reasons.append(f"{engine.max_waiting:.0f} request(s) were waiting while tokens streamed")
    if spec.concurrency > 1 and window_s > 0 and stagger_s > STAGGER_FRACTION * window_s:
        reasons.append(
            f"the streams' first tokens were {stagger_s:.2f} s apart in a {window_s:.2f} s "
            "decode window: one stream decoded while another was still prefilling"
        )
    if not reasons:
        return None
    cause = (
        "cold requests carried their whole context, so their prefills serialised through "
        "the chunked scheduler"
        if spec.cold or spec.depth == 0
        else "a prefill ran inside the decode window"
    )
    return Flag(
        FlagKind.PREFILL_IN_DECODE,
        f"measured prefill, not decode: {'; '.join(reasons)} ({cause})",
        COLD_FIX if spec.cold else "re-run the point; check nothing else is sending to the lane",
    )


def c2_below_c1(points: Sequence[PointResult]) -> dict[PointSpec, Flag]:
    """c > 1 points whose batch tg is far below the c1 tg at the same depth and mode."""
    c1 = {
        (p.spec.depth, p.spec.pp, p.spec.tg, p.spec.cold): p.tg
        for p in points
        if p.spec.concurrency == 1 and p.tg
    }
    flags: dict[PointSpec, Flag] = {}
    for p in points:
        ref = c1.get((p.spec.depth, p.spec.pp, p.spec.tg, p.spec.cold))
        if p.spec.concurrency > 1 and p.tg is not None and ref and p.tg < C2_COLLAPSE_RATIO * ref:
            flags[p.spec] = Flag(
                FlagKind.C2_BELOW_C1,
                f"c{p.spec.concurrency} total tg {p.tg:.1f} t/s is {p.tg / ref:.0%} of c1's "
                f"{ref:.1f} t/s at depth {p.spec.depth}: a healthy engine gives c2 ≥ c1, so "
                "this point measured something else than decode",
                COLD_FIX if p.spec.cold else "re-run the point and check for prefill in decode",
            )
    return flags
