"""Parsers on recorded output: tool-eval-bench, llama-benchy, /metrics, /proc, the wire probe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cockpit.bench import benchy_process, benchy_progress, benchy_result, forensics, probe
from cockpit.bench.driver import DriverConfig
from cockpit.bench.environment import link_kind, route_device
from cockpit.bench.events import BenchWarning, PointFinished, event_line, parse_event_line
from cockpit.bench.method import PhaseStats, Stat
from cockpit.bench.models import Flag, FlagKind, PointResult, PointSpec
from cockpit.bench.quality import parse_perf_table, parse_quality, quality_argv
from cockpit.bench.remote import remote_argv
from cockpit.bench.run import time_scale_default
from cockpit.bench.watch import Counters, scan_counters
from cockpit.errors import InputError
from cockpit.telemetry.histogram import Histogram

FIX = Path(__file__).parent.parent / "fixtures" / "bench"
REAL = Path(__file__).resolve().parents[1] / "fixtures" / "telemetry" / "vllm-0.32-cpu"


def test_quality_from_the_markdown_report() -> None:
    q = parse_quality((FIX / "tool_eval_bench_report.md").read_text())
    assert q is not None and (q.points, q.max_points, q.score) == (151, 176, 86)
    assert str(q) == "151/176 (86/100)"
    assert q.extra["responsiveness"] == "45/100 (median turn: 3.4s)"
    assert q.extra["deployability"] == "74/100 (α=0.7)"


def test_quality_from_the_terminal_summary() -> None:
    q = parse_quality((FIX / "tool_eval_bench_terminal.txt").read_text())
    assert q is not None and str(q) == "164/184 (89/100)"
    assert q.extra == {"responsiveness": "59/100 (median turn: 2.3s)", "deployability": "80/100"}
    assert parse_quality("no score here") is None


def test_quality_perf_invocation_adds_prefix_caching_unless_cold(tmp_path: Path) -> None:
    warm = quality_argv(
        "http://h:30000", "m", "lbl", tmp_path, perf=True, depths=(16384,), concurrency=(1, 2)
    )
    assert warm[warm.index("--benchy-args") + 1] == "--enable-prefix-caching"
    assert warm[warm.index("--depth") + 1] == "16384" and "--perf-only" in warm
    cold = quality_argv("http://h:30000", "m", "lbl", tmp_path, perf=True, cold=True)
    assert "--benchy-args" not in cold
    assert "--perf-only" not in quality_argv("http://h:30000", "m", "lbl", tmp_path)


def test_llama_benchy_result_in_engine_units() -> None:
    data = json.loads((FIX / "llama_benchy_result.json").read_text())
    found = benchy_result.parse_benchy_result(data, scale=10.0, runs=2)
    assert set(found) == {
        (0, 1, 2048, 32),
        (0, 2, 2048, 32),
        (4096, 1, 2048, 32),
        (4096, 2, 2048, 32),
    }
    inference, context = found[(0, 1, 2048, 32)]
    assert context is None and inference is not None and inference.tg is not None
    raw = next(b for b in data["benchmarks"] if b["concurrency"] == 1 and b["context_size"] == 0)
    assert inference.tg.mean == pytest.approx(raw["tg_throughput"]["mean"] / 10)
    assert inference.e2e_ttft_ms is not None
    assert inference.e2e_ttft_ms.mean == pytest.approx(raw["e2e_ttft"]["mean"] * 10)
    assert found[(4096, 2, 2048, 32)][1] is not None  # the context-load phase of a warm point


def test_llama_benchy_progress_groups_runs_and_phases() -> None:
    events = [
        e
        for line in (FIX / "llama_benchy_progress.jsonl").read_text().splitlines()
        if (e := benchy_progress.parse_progress_line(line))
    ]
    spec = PointSpec(4096, 2, 2048, 32)
    tracker = benchy_progress.ProgressTracker(spec)
    mine: set[int] = set()
    for event in events:
        if event["type"] == "request_start" and (event["context_size"], event["concurrency"]) == (
            4096,
            2,
        ):
            mine.add(event["request_id"])
        if event.get("request_id") in mine:
            tracker.feed(event)
    assert len(tracker.requests) == 8  # 2 runs × (2 context loads + 2 inferences)
    batches = tracker.inference_batches()
    assert len(batches) == 2 and all(len(b) == 2 for b in batches)
    windows = benchy_progress.decode_windows(tracker)
    assert len(windows) == 2 and all(end > start for (start, end), _ in windows)
    assert benchy_progress.parse_progress_line('{"type": "tokens"}') is None


def test_llama_benchy_streams_seen_in_its_progress_events_show_a_burst() -> None:
    """llama-benchy keeps no per-request tg for a stream whose decode had no span, so its own
    values cannot be split by run (a c2 burst read 8,023 t/s on the real lane, unflagged); its
    progress events, one per chunk as it parsed them, show every stream of every run."""
    from cockpit.bench.method import implausible_runs

    tracker = benchy_progress.ProgressTracker(PointSpec(0, 2, 512, 32))
    honest = [(1.0 + 0.003 * i, 1) for i in range(32)]  # ~333 t/s
    burst = [(1.0, 1)] + [(1.000_01 + 1e-6 * i, 1) for i in range(31)]  # one read
    all_at_once = [(1.0, 1), (1.0, 31)]  # the rest in one chunk stamped with the first
    rid = 0
    for run, streams in enumerate([(honest, honest), (honest, burst), (honest, all_at_once)]):
        for chunks in streams:
            tracker.feed({"type": "request_start", "request_id": rid, "ts": 0.9, "run_index": run})
            for ts, count in chunks:
                tracker.feed({"type": "tokens", "request_id": rid, "ts": ts, "count": count})
            rid += 1
    rates = benchy_progress.seen_stream_rates(tracker)
    assert [len(run) for run in rates] == [2, 2, 2]
    assert rates[0][0] == pytest.approx(31 / 0.093)
    assert rates[2][1] == float("inf")
    assert set(implausible_runs(rates, [None] * 3)) == {1, 2}


def test_llama_benchy_argv_per_group(tmp_path: Path) -> None:
    cfg = DriverConfig("http://h:1", "m", (), tmp_path, runs=2)
    warm = [PointSpec(d, c, 2048, 32) for d in (0, 65536) for c in (1, 2)]
    argv = benchy_process.benchy_argv(cfg, warm, "http://127.0.0.1:9/book.txt", tmp_path / "r.json")
    assert argv[argv.index("--depth") + 1 : argv.index("--depth") + 3] == ["0", "65536"]
    assert "--enable-prefix-caching" in argv and "--no-cache" not in argv
    cold = benchy_process.benchy_argv(
        cfg, [PointSpec(65536, 2, 2048, 32, True)], "u", tmp_path / "r"
    )
    assert "--no-cache" in cold and "--enable-prefix-caching" not in cold
    assert len(benchy_process.groups([*warm, PointSpec(0, 1, 2048, 32, True)])) == 2


def test_counters_scan_matches_the_real_capture() -> None:
    c = scan_counters((REAL / "metrics_under_load.txt").read_text(), at=1.0)
    assert (c.prompt, c.cached, c.generation, c.running) == (38930.0, 14848.0, 12839.0, 2.0)
    assert c.steps == 6928.0 and c.computed_prompt == 38930.0 - 14848.0
    idle = scan_counters((REAL / "metrics_idle.txt").read_text(), at=0.0)
    assert idle.signature() != c.signature()
    assert c.tpot is not None and c.tpot.buckets[0] == (0.01, 104.0)
    assert len(c.tpot.buckets) == 20 and c.tpot.buckets[-1][0] == float("inf")


def _tpot(count: float, total: float, buckets: dict[float, float]) -> Counters:
    return Counters(at=0.0, tpot=Histogram(tuple(sorted(buckets.items())), count, total))


def test_decode_bound_of_several_requests_is_the_fastest_ones() -> None:
    edges = (0.01, 0.025, 0.05, 0.1, 0.5)
    before = _tpot(0, 0.0, dict.fromkeys(edges, 0.0))
    # c2 cold: one stream stalled behind the other's prefill (0.4 s/token), the other clean (30 ms)
    after = _tpot(2, 0.43, {0.01: 0, 0.025: 0, 0.05: 1, 0.1: 1, 0.5: 2})
    assert after.decode_bound_since(before) == 1 / 0.025  # not 2 / 0.43, the mean's bound
    one = _tpot(1, 0.03, {0.01: 0, 0.025: 0, 0.05: 1, 0.1: 1, 0.5: 1})
    assert one.decode_bound_since(before) == 1 / 0.03
    fast = _tpot(2, 0.01, {0.01: 2, 0.025: 2, 0.05: 2, 0.1: 2, 0.5: 2})
    assert fast.decode_bound_since(before) == 2 / 0.01  # lowest bucket: the mean stands in


def test_proc_net_tcp_rows() -> None:
    text = (
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
        "   0: 0100007F:A1B2 0100007F:7530 01 00000000:00000010 00:00000000 00000000     0        0 4242 1\n"
    )
    [conn] = forensics.parse_proc_net_tcp(text)
    assert conn.remote == "127.0.0.1:30000" and conn.state == "ESTABLISHED"
    assert (conn.tx_queue, conn.rx_queue, conn.inode) == (0, 16, 4242)
    assert "recv-q 16 B" in str(conn)


def test_chunked_decoding_in_pieces() -> None:
    body = b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
    decoder = probe.ChunkedDecoder()
    out = b"".join(decoder.feed(body[i : i + 3]) for i in range(0, len(body), 3))
    assert out == b"hello world" and decoder.done


def test_probe_verdicts() -> None:
    steady = probe.WireLog(event_times=[i * 0.045 for i in range(20)], recv_events=[1] * 20)
    assert probe.verdict(steady, engine_itl_ms=45.0).startswith("server flushes on time")
    bursty = probe.WireLog(event_times=[0.0] * 5 + [1.0] * 5 + [2.0] * 5, recv_events=[5, 5, 5])
    assert probe.verdict(bursty, engine_itl_ms=45.0).startswith("SERVER FLUSHES LATE")
    g = probe.gap_stats([0.0, 0.1, 0.3])
    assert g is not None and g.count == 2 and g.max_ms == pytest.approx(200)


def test_link_and_scale() -> None:
    assert route_device("127.0.0.1 dev lo src 127.0.0.1 uid 0 \\    cache <local>") == "lo"
    assert link_kind("lo") == "loopback"
    # the time scale comes from the simulator's launcher only, never from an endpoint's fields
    assert time_scale_default({"COCKPIT_TIME_SCALE": "20"}) == 20.0
    assert time_scale_default({}) == 1.0
    with pytest.raises(InputError, match="COCKPIT_TIME_SCALE"):
        time_scale_default({"COCKPIT_TIME_SCALE": "fast"})


def test_events_roundtrip_as_json_lines() -> None:
    spec = PointSpec(65536, 2, 2048, 32, cold=True)
    result = PointResult(spec, None, flags=(Flag(FlagKind.HUNG, "hung", "fix"),))
    for event in (
        PointFinished(op="bench", result=result),
        BenchWarning(op="bench", message="m", point=spec),
    ):
        assert parse_event_line(event_line(event)) == event
    assert parse_event_line("llama-benchy (0.4.0)") is None
    argv = remote_argv(
        ["cockpit"],
        "http://10.0.0.1:30000",
        "m",
        1.0,
        [spec],
        3,
        False,
        "builtin",
        300.0,
        "lane",
        "cl",
        "/models/tok",
    )
    assert argv[:3] == ["cockpit", "bench", "--events-jsonl"]
    assert argv[argv.index("--tokenizer") + 1] == "/models/tok"
    assert "--cold" in argv and "--no-warmup" in argv


def test_tool_eval_bench_perf_table() -> None:
    [row] = parse_perf_table((FIX / "tool_eval_bench_perf_report.md").read_text())
    assert row.test == "pp2048 tg128 @ d0"
    assert (row.pp_tps, row.tg_tps, row.ttft_ms, row.total_ms) == (64950.0, 704.0, 61.0, 242.0)
    assert parse_perf_table("| Test | pp t/s |\n|---|---|\n") == []


def test_a_llama_benchy_point_without_its_own_bound_is_held_to_the_runs() -> None:
    """Two of three runs bursts (the median is a burst, so only the engine's bound can tell) and
    the point's own scrapes failed on a loaded host: the whole process's bound drops them. It
    read 55,921 t/s in CI before."""
    from types import SimpleNamespace

    from cockpit.bench.benchy import BenchyDriver, _ProcessState
    from cockpit.bench.benchy_progress import ProgressTracker
    from cockpit.bench.method import PhaseStats, Stat
    from cockpit.bench.models import FlagKind, PointSpec

    spec = PointSpec(depth=0, concurrency=1, pp=512, tg=32)
    tg = Stat.of([55_921.0, 60_000.0, 300.0])
    inference = PhaseStats(1, Stat.of([900.0] * 3), None, tg, None, None, None, None, 3, 0)
    runner = SimpleNamespace(cfg=SimpleNamespace(time_scale=1.0, runs=3))
    state = _ProcessState(overall=320.0)  # the point's own bound is missing: None
    result = BenchyDriver._result(runner, spec, inference, None, ProgressTracker(spec), [], state)  # type: ignore[arg-type]
    assert result.inference is not None and result.inference.tg is not None
    assert result.inference.tg.values == (300.0,) and result.inference.dropped == 2
    assert FlagKind.IMPLAUSIBLE in {f.kind for f in result.flags}


def test_a_dropped_run_takes_values_that_cannot_be_told_apart_by_run_with_it() -> None:
    """Seen on the real lane under load: llama-benchy timed one stream of six at c2 (a burst);
    all three runs were dropped as faster than physics, but its one value was kept as the tg."""
    stat = Stat.of([14260.95])
    per_request = Stat.of([300.0, 310.0, 290.0, 305.0, 295.0, 301.0])
    phase = PhaseStats(2, per_request, per_request, stat, stat, None, None, None, 6, 0)
    dropped = benchy_result.drop_runs(phase, {0, 1, 2}, runs=3)
    assert dropped.tg is None and dropped.tg_req is None and dropped.dropped == 3
    assert dropped.pp is None  # every run dropped: nothing of them is quoted
    one = benchy_result.drop_runs(phase, {1}, runs=3)
    assert one.pp is not None and one.pp.values == (300.0, 310.0, 295.0, 301.0)
    assert one.tg is None  # one value for three runs: whose it is cannot be told
