"""llama-benchy's definitions on hand-made timings, and the honesty checks on their shapes."""

from __future__ import annotations

import pytest

from cockpit.bench import honesty
from cockpit.bench.method import RequestTiming, Stat, phase_stats, token_timestamps
from cockpit.bench.models import FlagKind, PhaseStats, PointResult, PointSpec
from cockpit.bench.watch import Counters


def _timing(
    start: float,
    first: float,
    tokens: int,
    step: float,
    prompt: int = 2048,
    usage: int | None = None,
    per_chunk: int = 1,
) -> RequestTiming:
    t = RequestTiming(start=start, expected_prompt_tokens=prompt)
    t.first_response = first
    t.usage_prompt_tokens = usage or prompt
    t.usage_completion_tokens = tokens
    for i in range(tokens // per_chunk):
        t.content_chunk(first + i * step, per_chunk)
    t.finalize(first + (tokens // per_chunk) * step)
    return t


def test_single_stream_rates_follow_llama_benchy() -> None:
    r = _timing(start=0.0, first=0.5, tokens=32, step=0.02)
    stats = phase_stats([[r]], latency=0.1, concurrency=1)
    assert stats.pp is not None and stats.pp.mean == pytest.approx(2048 / 0.4)  # TTFR − latency
    assert stats.tg is not None and stats.tg.mean == pytest.approx(31 / (31 * 0.02))
    assert stats.e2e_ttft_ms is not None and stats.e2e_ttft_ms.mean == pytest.approx(500)
    assert stats.tg_req == stats.tg  # c1: total is the per-request figure


def test_batch_totals_span_all_streams() -> None:
    a = _timing(start=0.0, first=0.5, tokens=32, step=0.02)
    b = _timing(start=0.0, first=1.0, tokens=32, step=0.02)
    stats = phase_stats([[a, b]], latency=0.0, concurrency=2)
    assert stats.tg is not None and stats.tg_req is not None
    # (31 + 31) decode tokens from the first first-token (0.5) to the last last-token (1.62)
    assert stats.tg.mean == pytest.approx(62 / (1.0 + 31 * 0.02 - 0.5))
    assert stats.tg_req.mean == pytest.approx(50.0)
    assert stats.pp is not None and stats.pp.mean == pytest.approx(4096 / 1.0)


def test_usage_counts_only_when_close_to_what_was_sent() -> None:
    warm = _timing(0.0, 0.5, 8, 0.02, prompt=2048, usage=67_613)  # context + prompt, warm
    assert warm.prompt_tokens == 2048
    cold = _timing(0.0, 0.5, 8, 0.02, prompt=67_584, usage=67_613)
    assert cold.prompt_tokens == 67_613


def test_multi_token_chunks_spread_since_the_previous_token() -> None:
    times, count = token_timestamps([1.0, 1.3], [1, 3], 4, 1.0)
    assert count == 4 and times == pytest.approx([1.0, 1.1, 1.2, 1.3])
    times, count = token_timestamps([1.0, 2.0], [None, None], 5, 1.0)
    assert count == 5 and times == pytest.approx([1.0, 1.25, 1.5, 1.75, 2.0])


def test_stat_is_mean_and_population_std() -> None:
    stat = Stat.of([1.0, 3.0])
    assert stat is not None and (stat.mean, stat.std) == (2.0, 1.0) and str(stat) == "2.0 ± 1.0"
    assert Stat.of([]) is None


def _counters(prompt: float, cached: float = 0.0) -> Counters:
    return Counters(at=0.0, prompt=prompt, cached=cached, generation=0.0)


def test_cold_c2_shape_is_flagged_with_the_fix() -> None:
    spec = PointSpec(65536, 2, 2048, 32, cold=True)
    # stream A decodes at once, B's 67K prefill ends 10 s later inside A's decode window
    a = _timing(0.0, 10.0, 32, 0.3)
    b = _timing(0.0, 20.0, 32, 0.02)
    seen = honesty.observe([a, b], _counters(0), _counters(135_226))
    assert seen is not None and seen.stagger_share > 0.9
    flag = honesty.prefill_in_decode(spec, seen)
    assert flag is not None and flag.kind == FlagKind.PREFILL_IN_DECODE
    assert "measured prefill, not decode" in flag.message and "--enable-prefix-caching" in flag.fix


def test_warm_stagger_with_a_prompt_worth_of_prefill_is_not_flagged() -> None:
    spec = PointSpec(65536, 2, 2048, 32)
    a = _timing(0.0, 0.5, 32, 0.02)
    b = _timing(0.0, 1.6, 32, 0.02)  # admitted late: its start fills most of the window
    seen = honesty.observe([a, b], _counters(100, 0), _counters(100 + 2 * 67_613, 2 * 65_540))
    assert seen is not None and seen.stagger_share > honesty.STAGGER_SHARE
    assert honesty.prefill_in_decode(spec, seen) is None
    assert honesty.prefill_in_decode(PointSpec(65536, 1, 2048, 32), seen) is None


def _point(depth: int, c: int, tg: float, cold: bool = False) -> PointResult:
    stat = Stat(tg, 0.0, (tg,))
    return PointResult(
        PointSpec(depth, c, 2048, 32, cold),
        PhaseStats(c, None, None, stat, stat, None, None, None, c, 0),
    )


def test_c2_far_below_c1_is_flagged_per_depth() -> None:
    points = [
        _point(65536, 1, 45.0, True),
        _point(65536, 2, 13.7, True),
        _point(0, 1, 67.3, True),
        _point(0, 2, 72.2, True),
    ]
    flags = honesty.c2_below_c1(points)
    assert list(flags) == [points[1].spec]
    assert "30%" in flags[points[1].spec].message


def _seed_baseline() -> list[PointResult]:
    """The seed's honest 4x Flash baseline (§3), c1 and c2 tg per depth."""
    table = {
        0: (67.3, 72.2),
        4096: (62.1, 78.9),
        8192: (61.5, 73.8),
        16384: (55.2, 69.9),
        65536: (46.5, 58.5),
        131072: (37.4, 47.0),
        262144: (44.4, 44.6),
    }
    return [
        _point(d, c, tg) for d, pair in table.items() for c, tg in zip((1, 2), pair, strict=True)
    ]


def test_the_seeds_c1_128k_dip_is_flagged_with_its_re_point() -> None:
    target = ("--recipe", "mimo26-flash-mopd-4x-sparkring", "--cluster", "dgx58-switch")
    flags = honesty.cross_point_flags(_seed_baseline(), target)
    assert list(flags) == [PointSpec(131072, 1, 2048, 32)]  # c2 47.0 stays above 256K's 44.6
    (flag,) = flags[PointSpec(131072, 1, 2048, 32)]
    assert flag.kind == FlagKind.DEPTH_DIP and "below the 44.4 t/s measured deeper" in flag.message
    assert (
        "cockpit bench --recipe mimo26-flash-mopd-4x-sparkring --cluster dgx58-switch "
        "--label repoint-d131072 --depths 131072 --concurrency 1 --pp 2048 --tg 32"
    ) in flag.fix


def test_a_point_whose_runs_disagree_is_flagged_noisy() -> None:
    steady = Stat.of([45.0, 46.0, 45.5])
    shaky = Stat.of([45.0, 30.0, 46.0])
    assert steady and shaky
    points = [
        PointResult(
            PointSpec(d, 1, 2048, 32), PhaseStats(1, steady, steady, tg, tg, *[None] * 3, 3, 0)
        )
        for d, tg in ((0, steady), (4096, shaky))
    ]
    flags = honesty.noisy(points)
    assert list(flags) == [points[1].spec]
    assert flags[points[1].spec].kind == FlagKind.NOISY and "±" in flags[points[1].spec].message
    # a single run has no spread to judge
    assert not honesty.noisy([_point(0, 1, 45.0)])


def test_a_re_point_command_is_shell_quoted() -> None:
    target = ("--endpoint", "http://127.0.0.1:8000", "--lane", "odd lane;rm -rf ~")
    line = honesty.repoint_command(target, PointSpec(131072, 1, 2048, 32, cold=True))
    assert "--lane 'odd lane;rm -rf ~'" in line and line.endswith("--tg 32 --cold")


def test_a_point_faster_than_every_shallower_one_is_the_one_flagged() -> None:
    # measured on the simulated qwen lane under load: one stall-inflated point at 16K
    c1 = [_point(d, 1, tg) for d, tg in ((0, 181.8), (4096, 182.2), (8192, 181.3), (16384, 232.7))]
    flags = honesty.depth_dips(c1, ("--recipe", "qwen3-0.6b-2x", "--cluster", "dgx56-switch"))
    assert list(flags) == [c1[3].spec]  # not the three honest points below it
    assert "above every shallower point (at most 182.2 t/s)" in flags[c1[3].spec].message


def test_one_run_shows_no_spread_and_several_do() -> None:
    from cockpit.bench.method import Stat, spread_text

    one = Stat.of([116.7])
    assert one is not None and spread_text(one) == "116.7" and "±" not in str(one)
    three = Stat.of([1.0, 2.0, 3.0])
    assert three is not None and spread_text(three) == "2.0 ± 0.8"


def test_implausible_runs_by_median_and_by_the_engines_own_decode_rate() -> None:
    from cockpit.bench.method import decode_bound, implausible_runs

    runs = [[120.0], [9_500.0], [125.0]]  # the burst: 9,500 t/s among ~120
    assert set(implausible_runs(runs, [None] * 3)) == {1}
    bound = decode_bound(0.6, 100.0)  # 100 requests averaging 6 ms per output token
    assert bound == pytest.approx(166.7, rel=1e-3)
    # two bursty runs of three: the median is fooled, the engine's own rate is not
    bursty = [[900.0], [950.0], [120.0]]
    assert implausible_runs(bursty, [None] * 3) == {}
    assert set(implausible_runs(bursty, [bound] * 3)) == {0, 1}
    assert implausible_runs([[230.0], [240.0]], [bound] * 2) == {}  # within the relay margin
    # the first bench after a boot: run 1 read 2.4x the engine's own rate, 1.5x is the limit
    assert set(implausible_runs([[177.6], [74.8]], [70.0] * 2)) == {0}
    # a stream whose tokens came at one instant, with no bound known and the median fooled
    at_once = [[float("inf")], [float("inf")], [120.0]]
    assert set(implausible_runs(at_once, [None] * 3)) == {0, 1}


def test_adapt_prompt_trims_like_llama_benchy() -> None:
    from cockpit.bench.prompts import adapted_sizes

    assert adapted_sizes(PointSpec(0, 1, 512, 32), 4, 6) == (508, 0)
    assert adapted_sizes(PointSpec(1024, 1, 512, 32), 4, 6) == (512, 1018)


def test_token_count_flag() -> None:
    from cockpit.bench import honesty
    from cockpit.bench.models import FlagKind

    spec = PointSpec(65536, 1, 2048, 32)
    assert honesty.token_mismatch(spec, 65536 + 2048 + 5) is None
    flag = honesty.token_mismatch(spec, 17_000)  # a byte tokenizer's "64K" in real tokens
    assert flag is not None and flag.kind is FlagKind.TOKEN_MISMATCH


def test_staggered_honest_streams_read_above_their_total_and_are_not_flagged() -> None:
    """c2: A decodes 30 tokens over 0–1 s (stalled behind B's prefill), B over 0.7–1.0 s."""
    from cockpit.bench import honesty
    from cockpit.bench.method import RequestTiming, implausible_runs, phase_stats, stream_rates
    from cockpit.bench.models import PointResult

    def stream(first: float, span: float, tokens: int) -> RequestTiming:
        r = RequestTiming(0.0, 10, first_response=first, first_token=first)
        r.token_times = [first + span * i / (tokens - 1) for i in range(tokens)]
        r.total_tokens, r.end = tokens, first + span
        return r

    batch = [stream(0.0, 1.0, 31), stream(0.7, 0.3, 31)]
    phase = phase_stats([batch], latency=0.0, concurrency=2)
    assert phase.tg is not None and phase.tg_req is not None
    assert phase.tg_req.mean > phase.tg.mean  # AM of the rates over the batch's own rate
    assert implausible_runs([stream_rates(batch)], [1 / 0.005]) == {}  # fastest request: 5 ms
    spec = PointSpec(1024, 2, 512, 30)
    assert honesty.cross_point_flags([PointResult(spec, phase)], ["--endpoint", "u"]) == {}
