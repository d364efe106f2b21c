"""The cockpit's own honesty checks on bench points (pure functions over timings and counters).

The seed's §3: a c2 depth sweep without prefix warm-up sent two cold ~67K-token prefills at once;
they serialised through the 8192-token chunked scheduler, so one stream "decoded" while its
partner's prefill ran, and the reported tg (13.7 / 5.7 / 2.1 t/s) measured prefill, not decode.

A point is flagged "measured prefill, not decode" when, in its worst measured batch:

- the streams' first tokens came more than `STAGGER_SHARE` of the decode window apart (one
  stream's prefill sat inside the other's decode: the client sees it alone), and
- the engine's counters say that prefill was context-sized: it computed more than
  `CONTEXT_FACTOR` × (streams × prompt) prompt tokens over the batch, prefix-cache hits excluded
  (when the counters are unavailable the client evidence stands alone).

A warm batch may also stagger (the second request arrives while the first one's step runs), but
then only a prompt's worth is prefilled in the window and decode dominates: no flag.

Across points (`cross_point_flags`): a c2 batch tg far below the c1 tg at the same depth; a
point that breaks the depth curve (the seed's c1 128K dip, 37.4 < 44.4 at 256K: "one clean
re-point needed to confirm"), flagged with the command that re-measures it; and a
point whose runs disagree by more than `NOISY_SPREAD`, whose mean is no figure to quote.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from cockpit.bench.method import RequestTiming
from cockpit.bench.models import EngineObservation, Flag, FlagKind, PointResult, PointSpec
from cockpit.bench.watch import Counters

C2_COLLAPSE_RATIO = 0.5
DIP_RATIO = 0.9
"""A point below this share of a deeper point's tg (same concurrency and shape) is a dip."""
NOISY_SPREAD = 0.1
"""Population std / mean of a point's runs above which its tg or pp is called noisy."""
STAGGER_SHARE = 0.6
CONTEXT_FACTOR = 1.5
COLD_FIX = (
    "measure decode with a warm prefix: drop --cold (the cockpit loads the context first), or "
    "pass --enable-prefix-caching to llama-benchy (tool-eval-bench: "
    '--benchy-args "--enable-prefix-caching")'
)


def decode_window(
    firsts: Sequence[float], lasts: Sequence[float]
) -> tuple[tuple[float, float], float] | None:
    """The decode window (earliest first token → latest last token) and the first tokens' spread.

    `firsts` and `lasts`: the batch's streams' first- and last-token times (the drivers' clocks).
    """
    if not firsts or not lasts or max(lasts) <= min(firsts):
        return None
    return (min(firsts), max(lasts)), max(firsts) - min(firsts)


def observe(
    batch: Sequence[RequestTiming], before: Counters | None, after: Counters | None
) -> EngineObservation | None:
    """A batch's decode window and stagger, with the engine's counter movement around it."""
    ok = [r for r in batch if r.error is None]
    found = decode_window(
        [r.first_token for r in ok if r.first_token is not None],
        [r.token_times[-1] for r in ok if r.token_times],
    )
    if found is None:
        return None
    (start, end), stagger = found
    prefill = generation = None
    if before is not None and after is not None:
        a, b = before.computed_prompt, after.computed_prompt
        prefill = b - a if a is not None and b is not None and b >= a else None
        if before.generation is not None and after.generation is not None:
            generation = after.generation - before.generation
    return EngineObservation(
        window_s=end - start,
        stagger_s=stagger,
        prefill_tokens=prefill,
        generation_tokens=generation,
    )


def worst(observations: Sequence[EngineObservation]) -> EngineObservation | None:
    """The run whose decode window was most taken by a stream's late start."""
    return max(observations, key=lambda o: o.stagger_share, default=None)


def prefill_in_decode(spec: PointSpec, engine: EngineObservation | None) -> Flag | None:
    """Flag a point whose decode window held a context-sized prefill."""
    if engine is None or spec.concurrency < 2 or engine.stagger_share <= STAGGER_SHARE:
        return None
    own = spec.concurrency * spec.pp
    if engine.prefill_tokens is not None and engine.prefill_tokens <= CONTEXT_FACTOR * own:
        return None
    counted = (
        f"the engine prefilled {engine.prefill_tokens:,.0f} prompt tokens over the batch "
        f"where {spec.concurrency} × {spec.pp} = {own:,} were this point's prompts"
        if engine.prefill_tokens is not None
        else "the engine's counters were not available to size that prefill"
    )
    return Flag(
        FlagKind.PREFILL_IN_DECODE,
        f"measured prefill, not decode: the streams' first tokens came {engine.stagger_s:.1f} s "
        f"apart in a {engine.window_s:.1f} s decode window ({engine.stagger_share:.0%}), so one "
        f"stream was still prefilling while the other decoded; {counted}. Cold requests carry "
        "their whole context, and concurrent cold prefills serialise through the chunked "
        "scheduler",
        COLD_FIX if spec.cold or spec.depth else "re-run; check nothing else sends to the lane",
    )


def cross_point_flags(
    points: Sequence[PointResult], target: Sequence[str]
) -> dict[PointSpec, tuple[Flag, ...]]:
    """The flags that need the whole sweep: collapsed c2, depth dips, noisy points.

    `target`: the `cockpit bench` options that name the lane (`--recipe R --cluster C`, or
    `--endpoint URL --lane L`), for the re-point commands.
    """
    flags: dict[PointSpec, list[Flag]] = {}
    for check in (c2_below_c1(points), depth_dips(points, target), noisy(points)):
        for spec, flag in check.items():
            flags.setdefault(spec, []).append(flag)
    return {spec: tuple(found) for spec, found in flags.items()}


def _shape(spec: PointSpec) -> tuple[int, int, bool]:
    return spec.pp, spec.tg, spec.cold


def c2_below_c1(points: Sequence[PointResult]) -> dict[PointSpec, Flag]:
    """c > 1 points whose batch tg is far below the c1 tg at the same depth and mode."""
    c1 = {(p.spec.depth, *_shape(p.spec)): p.tg for p in points if p.spec.concurrency == 1 and p.tg}
    flags: dict[PointSpec, Flag] = {}
    for p in points:
        ref = c1.get((p.spec.depth, *_shape(p.spec)))
        if p.spec.concurrency > 1 and p.tg is not None and ref and p.tg < C2_COLLAPSE_RATIO * ref:
            flags[p.spec] = Flag(
                FlagKind.C2_BELOW_C1,
                f"c{p.spec.concurrency} total tg {p.tg:.1f} t/s is {p.tg / ref:.0%} of c1's "
                f"{ref:.1f} t/s at depth {p.spec.depth}: a healthy engine gives c2 ≥ c1, so "
                "this point measured something else than decode",
                COLD_FIX if p.spec.cold else "re-run the point and check for prefill in decode",
            )
    return flags


def repoint_command(target: Sequence[str], spec: PointSpec) -> str:
    """The `cockpit bench` line (shell-quoted) that measures one point again, in the same mode."""
    argv = ["cockpit", "bench", *target, "--label", f"repoint-d{spec.depth}"]
    argv += ["--depths", str(spec.depth), "--concurrency", str(spec.concurrency)]
    argv += ["--pp", str(spec.pp), "--tg", str(spec.tg)] + (["--cold"] if spec.cold else [])
    return shlex.join(argv)


def depth_dips(points: Sequence[PointResult], target: Sequence[str]) -> dict[PointSpec, Flag]:
    """Points that break the depth curve, with the command that re-points each.

    Decode gets slower with context, never faster (same concurrency and shape, unflagged
    points). A point faster than every shallower one by more than 1/`DIP_RATIO` is a spike; a
    point below `DIP_RATIO` × a deeper non-spike point is a dip (the seed's c1 128K: 37.4 under
    256K's 44.4). Either is a disturbed point or a real effect (a CUDA-graph capture size), and
    one clean re-point tells which.
    """
    series: dict[tuple[int, int, int, bool], list[PointResult]] = {}
    for p in sorted(points, key=lambda p: p.spec.depth):
        if p.tg is not None and not p.flags:
            series.setdefault((p.spec.concurrency, *_shape(p.spec)), []).append(p)
    flags: dict[PointSpec, Flag] = {}
    for run in series.values():
        tgs = [p.tg or 0.0 for p in run]
        spikes = {i for i in range(1, len(run)) if tgs[i] * DIP_RATIO > max(tgs[:i])}
        for i, p in enumerate(run):
            deeper = [tgs[j] for j in range(i + 1, len(run)) if j not in spikes]
            if i in spikes:
                what = f"above every shallower point (at most {max(tgs[:i]):.1f} t/s)"
            elif deeper and tgs[i] < DIP_RATIO * max(deeper):
                what = f"below the {max(deeper):.1f} t/s measured deeper"
            else:
                continue
            flags[p.spec] = Flag(
                FlagKind.DEPTH_DIP,
                f"tg {tgs[i]:.1f} t/s at depth {p.spec.depth} is {what}: decode does not speed "
                "up with context, so this is a disturbed point or a real effect (e.g. a CUDA-graph "
                "capture size); one clean re-point tells which",
                f"re-point it: `{repoint_command(target, p.spec)}`",
            )
    return flags


def noisy(points: Sequence[PointResult]) -> dict[PointSpec, Flag]:
    """Points whose runs disagree: their mean hides a disturbance (a neighbour, a stall)."""
    flags: dict[PointSpec, Flag] = {}
    for p in points:
        if p.inference is None:
            continue
        stats = {"tg": p.inference.tg, "pp": p.inference.pp}
        spreads = {
            name: (stat.std / stat.mean, len(stat.values))
            for name, stat in stats.items()
            if stat is not None and len(stat.values) > 1 and stat.mean > 0
        }
        worst = max(spreads, key=lambda name: spreads[name][0], default=None)
        if worst is not None and spreads[worst][0] > NOISY_SPREAD:
            spread, runs = spreads[worst]
            flags[p.spec] = Flag(
                FlagKind.NOISY,
                f"{worst} varies ±{spread:.0%} across {runs} runs: something disturbed some of "
                "them (another client on the lane, a busy bench host, a flaky link)",
                "re-run with more --runs from a quiet, wired bench host (--bench-host)",
            )
    return flags


IMPLAUSIBLE_FIX = (
    "the streams arrived in bursts (several SSE chunks per socket read: a busy client host or "
    "a buffering proxy); `cockpit probe` shows how the server flushes; re-run from a quiet host"
)


def implausible_flag(spec: PointSpec, bad: dict[int, str], runs: int) -> Flag:
    """The flag of a point some of whose runs were dropped as faster than physics."""
    why = "; ".join(f"run {i + 1}: {reason}" for i, reason in sorted(bad.items()))
    return Flag(
        FlagKind.IMPLAUSIBLE,
        f"{len(bad)} of {runs} runs dropped as faster than physics, not averaged ({why})",
        IMPLAUSIBLE_FIX,
    )


def no_decode_flag(spec: PointSpec) -> Flag:
    """The flag of a point none of whose kept runs had a decode window to measure (streams that
    came in one read are the judge's `decode-not-observable`; this is what is left: a stream of
    one token, or a driver that timed none)."""
    return Flag(
        FlagKind.IMPLAUSIBLE,
        f"{spec.label}: no decode measured: no stream had a token after its first to time, so "
        "there is no window to divide by",
        "ask for more than one response token (--tg); `cockpit probe` shows how the server flushes",
    )


TOKEN_SLACK = 0.05
"""The engine's prompt count may differ from the intended one by this share (chat template)."""
TOKEN_SLACK_MIN = 32


def token_mismatch(spec: PointSpec, usage_prompt_tokens: int | None) -> Flag | None:
    """Flag a point whose requests the engine counted differently from what was intended.

    The bench cuts prompts with a tokenizer; when it is not the lane's own, a "64K" depth may be
    a quarter of that in the engine's tokens, and every rate is off by as much.
    """
    if usage_prompt_tokens is None:
        return None
    intended = spec.pp + spec.depth
    if abs(usage_prompt_tokens - intended) <= max(TOKEN_SLACK * intended, TOKEN_SLACK_MIN):
        return None
    return Flag(
        FlagKind.TOKEN_MISMATCH,
        f"the engine counted {usage_prompt_tokens:,} prompt tokens per request where "
        f"{intended:,} were intended: the bench's tokenizer is not the lane's, so the depths and "
        "rates are in the wrong tokens",
        "use the lane's tokenizer (the default with --recipe/--cluster; --tokenizer DIR with "
        "--endpoint)",
    )
