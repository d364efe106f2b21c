"""The one judge of a bench point (`cockpit.bench.judge`), on fixtures: runs held to the engine's
own decode rate, and streams whose decode the client could not observe."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

from cockpit.bench.benchy import BenchyDriver, _ProcessState
from cockpit.bench.benchy_progress import ProgressTracker
from cockpit.bench.judge import RunSeen, StreamReads, judge, reads_of
from cockpit.bench.method import PhaseStats, Stat
from cockpit.bench.models import FlagKind, PointSpec

SPEC = PointSpec(depth=0, concurrency=1, pp=512, tg=128)
HONEST = StreamReads(largest=1, tokens=128)


def _phase(tg: list[float]) -> PhaseStats:
    return PhaseStats(1, Stat.of([900.0] * len(tg)), None, Stat.of(tg), None, None, None, None,
                      len(tg), 0)  # fmt: skip


def _stats_of(
    tg: list[float], asked: list[frozenset[int]]
) -> Callable[[frozenset[int]], PhaseStats]:
    def stats(dropped: frozenset[int]) -> PhaseStats:
        asked.append(dropped)
        kept = [v for i, v in enumerate(tg) if i not in dropped]
        return _phase(kept) if kept else PhaseStats(1, None, None, None, None, None, None, None,
                                                    len(tg), 0, dropped=len(dropped))  # fmt: skip

    return stats


def test_reads_group_one_stamp_or_microseconds_apart() -> None:
    # the built-in client stamps a read once; llama-benchy stamps each chunk of it
    assert reads_of([(1.0, 1), (1.0, 1), (1.01, 1)]) == StreamReads(2, 3)
    burst = [(1.0, 1)] + [(1.000_01 + 1e-6 * i, 1) for i in range(31)]
    assert reads_of(burst, gap=0.0005) == StreamReads(32, 32)
    assert reads_of([(1.0 + 0.003 * i, 1) for i in range(32)], gap=0.0005) == StreamReads(1, 32)
    assert StreamReads(32, 32).unobserved and not StreamReads(16, 32).unobserved
    assert not StreamReads(1, 1).unobserved  # one token: no decode to observe anyway


def test_the_first_run_after_a_boot_is_held_to_the_engines_own_rate() -> None:
    """The issue's real lane: run 1 read 177.6 t/s, run 2 74.8, the engine's own inter-token time
    ~14 ms (~70 t/s): the point said 126.2 t/s, "done". A run above 1.5x the engine is dropped."""
    asked: list[frozenset[int]] = []
    runs = [RunSeen((177.6,), (HONEST,), 70.0), RunSeen((74.8,), (HONEST,), 70.0)]
    verdict = judge(SPEC, runs, [], _stats_of([177.6, 74.8], asked))
    assert verdict.dropped == {0} and asked == [frozenset({0})]
    assert verdict.inference.tg is not None and verdict.inference.tg.values == (74.8,)
    [flag] = verdict.flags
    assert flag.kind is FlagKind.IMPLAUSIBLE and "run 1" in flag.message
    assert "allows 70.0" in flag.message
    # within 1.5x of the engine: kept
    close = [RunSeen((100.0,), (HONEST,), 70.0), RunSeen((74.8,), (HONEST,), 70.0)]
    assert not judge(SPEC, close, [], _stats_of([100.0, 74.8], [])).flags


def test_a_decode_that_arrived_in_one_read_carries_no_rate_with_or_without_a_bound() -> None:
    """A buffering proxy: every stream's tokens in one late read (or two: the first alone). The
    median cannot see it (every run is a burst) and a bare endpoint has no engine bound."""
    for bound in (None, 70.0):
        asked: list[frozenset[int]] = []
        runs = [
            RunSeen((23_332.0,), (StreamReads(127, 128),), bound),
            RunSeen((), (StreamReads(128, 128),), bound),
        ]
        verdict = judge(SPEC, runs, [], _stats_of([23_332.0, 0.0], asked))
        assert verdict.dropped == {0, 1} and verdict.inference.tg is None
        assert verdict.inference.pp is None  # its first token's time is the proxy's too
        [flag] = verdict.flags
        assert flag.kind is FlagKind.UNOBSERVABLE
        assert "127 of its 128 tokens reached the client in one read" in flag.message
        assert "no rate is reported" in flag.message and "proxy" in flag.fix


def test_llama_benchys_point_whose_streams_came_in_one_read_has_no_rate() -> None:
    """llama-benchy's own values for such a stream read thousands of t/s; its progress lines show
    each stream's chunks microseconds apart: the point carries no rate, with or without /metrics."""
    spec = PointSpec(depth=0, concurrency=1, pp=512, tg=32)
    tracker = ProgressTracker(spec)
    for run in range(2):
        rid = run
        tracker.feed({"type": "request_start", "request_id": rid, "ts": 1.0, "run_index": run})
        tracker.feed({"type": "request_first_token", "request_id": rid, "ts": 2.0})
        for i in range(32):
            tracker.feed({"type": "tokens", "request_id": rid, "ts": 2.0 + 1e-6 * i, "count": 1})
        tracker.feed({"type": "request_end", "request_id": rid, "ts": 2.0001, "total_tokens": 32})
    runner = SimpleNamespace(cfg=SimpleNamespace(time_scale=1.0, runs=2))
    for bound in (None, 70.0):
        state = _ProcessState(overall=bound)
        result = BenchyDriver._result(  # type: ignore[arg-type]
            runner, spec, _phase([23_332.0, 32_451.0]), None, tracker, [], state
        )
        assert result.inference is not None and result.inference.tg is None, bound
        assert result.inference.pp is None and result.tg is None
        assert result.has(FlagKind.UNOBSERVABLE) and not result.has(FlagKind.IMPLAUSIBLE)
