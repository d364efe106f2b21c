"""The one judge of a bench point, for both drivers: which runs count and what the point says.

A driver measures runs and hands over what its client saw of each (`RunSeen`): every stream's
decode rate, how its tokens arrived (the largest share one socket read brought), and the
engine's own fastest decode rate over the run, when its `/metrics` say. `judge` decides the rest:

- a run whose decode the client could not observe is dropped and carries no rate: when one read
  brought more than `UNOBSERVED_SHARE` of a stream's tokens (a buffering proxy sends a whole
  answer at the end; a starved client reads a backlog at once), the time between its tokens is
  the relay's, not the engine's — and its first token's time is no prefill time either;
- a run faster than physics is dropped (`method.implausible_runs`: a stream above the engine's
  own rate by more than `BOUND_MARGIN`, or far above the point's median);
- the point keeps the runs left, and is flagged for what was dropped and for a prefill that sat
  in its decode window (`honesty.prefill_in_decode`).

A point with no run left has no figure, and no conclusion may be drawn from it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cockpit.bench import honesty
from cockpit.bench.method import PhaseStats, implausible_runs
from cockpit.bench.models import EngineObservation, Flag, FlagKind, PointSpec

UNOBSERVED_SHARE = 0.5
"""One read may bring at most this share of a stream's tokens for its decode to be timed."""
READ_GAP_S = 0.0005
"""Wall seconds: llama-benchy stamps each chunk of one read apart, microseconds from the last;
the fastest engine decodes the bench meets step every few milliseconds."""
UNOBSERVED_FIX = (
    "time the decode where the tokens arrive as the engine makes them: bench the engine without "
    "the buffering proxy or relay in between (`cockpit probe` shows how the server flushes), from "
    "a client host that is not starved of CPU"
)


@dataclass(frozen=True)
class StreamReads:
    """How one stream's tokens reached the client: its largest read and all its tokens."""

    largest: int
    tokens: int

    @property
    def unobserved(self) -> bool:
        return self.tokens >= 2 and self.largest > UNOBSERVED_SHARE * self.tokens


def reads_of(arrivals: Sequence[tuple[float, int]], gap: float = 0.0) -> StreamReads:
    """A stream's `(time, tokens)` arrivals grouped into reads: arrivals at most `gap` after the
    previous one came in the same read (`gap` 0: the built-in client stamps a read once)."""
    largest = current = total = 0
    last: float | None = None
    for at, tokens in arrivals:
        current = tokens if last is None or at - last > gap else current + tokens
        largest, total, last = max(largest, current), total + tokens, at
    return StreamReads(largest, total)


@dataclass(frozen=True)
class RunSeen:
    """One measured run as the client saw it: each stream's tg t/s and reads, and the engine's
    fastest per-stream decode rate over the run (None when `/metrics` did not say)."""

    rates: tuple[float, ...]
    reads: tuple[StreamReads, ...]
    bound: float | None


@dataclass(frozen=True)
class Judgement:
    """The point's figures over the runs kept, its worst decode window, its flags, and which
    runs were dropped (their indices)."""

    inference: PhaseStats
    engine: EngineObservation | None
    flags: tuple[Flag, ...]
    dropped: frozenset[int]


def unobserved(run: RunSeen) -> str | None:
    """Why the run's decode was not observable, None when it was."""
    for index, stream in enumerate(run.reads):
        if stream.unobserved:
            return (
                f"stream {index + 1}: {stream.largest} of its {stream.tokens} tokens reached the "
                "client in one read"
            )
    return None


def judge(
    spec: PointSpec,
    runs: Sequence[RunSeen],
    observations: Sequence[EngineObservation | None],
    stats: Callable[[frozenset[int]], PhaseStats],
) -> Judgement:
    """The point's figures (`stats` of the runs kept: it gets the indices of the runs dropped),
    its engine observation and flags. `observations`: per run, its decode window as the engine's
    counters and the client saw it."""
    unseen = {i: why for i, run in enumerate(runs) if (why := unobserved(run)) is not None}
    seen = [i for i in range(len(runs)) if i not in unseen]
    fast = {
        seen[i]: why
        for i, why in implausible_runs(
            [runs[i].rates for i in seen], [runs[i].bound for i in seen]
        ).items()
    }
    dropped = frozenset(unseen) | frozenset(fast)
    inference = stats(dropped)
    flags: list[Flag] = []
    if unseen:
        flags.append(unobservable_flag(unseen, len(runs)))
    if fast:
        flags.append(honesty.implausible_flag(spec, fast, len(runs)))
    if inference.tg is None and len(dropped) < len(runs) and not inference.errors:
        flags.append(honesty.no_decode_flag(spec))
    engine = honesty.worst(
        [o for i, o in enumerate(observations) if i not in dropped and o is not None]
    )
    prefill = honesty.prefill_in_decode(spec, engine)
    if prefill is not None:
        flags.append(prefill)
    return Judgement(inference, engine, tuple(flags), dropped)


def unobservable_flag(unseen: dict[int, str], runs: int) -> Flag:
    """The flag of a point some (or all) of whose runs the client could not time."""
    why = "; ".join(f"run {i + 1}: {reason}" for i, reason in sorted(unseen.items()))
    outcome = (
        "no rate is reported for this point and no conclusion is drawn from it"
        if len(unseen) == runs
        else f"{len(unseen)} of {runs} runs dropped, not averaged"
    )
    return Flag(
        FlagKind.UNOBSERVABLE,
        f"decode not observable ({why}): the tokens' arrival times are a relay's "
        f"or a buffer's, not the engine's; {outcome}",
        UNOBSERVED_FIX,
    )
