"""The built-in driver against a tiny streaming server: method, events, watchdog, no leftovers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cockpit.bench.artifacts import load_report
from cockpit.bench.events import (
    BenchWarning,
    LatencyMeasured,
    PointFinished,
    PointStarted,
    RequestProgress,
)
from cockpit.bench.models import FlagKind, PointResult, PointSpec, SweepPlan
from cockpit.bench.run import BenchRequest, bench, beyond_context
from cockpit.bench.sweep import BuiltinDriver, DriverConfig
from cockpit.errors import InputError
from cockpit_sim.engine.text import TOKENIZER_DIR
from cockpit_sim.engine.text import encode as _encode
from tests.bench.fake_engine import MODEL, FakeEngine, served


def tokens(content: str) -> int:
    """Length in the engine tokenizer's tokens (the bench cuts prompts in them)."""
    return len(_encode(content))


@pytest.fixture
async def fake() -> AsyncIterator[tuple[FakeEngine, str]]:
    engine = FakeEngine()
    async with served(engine.app()) as url:
        yield engine, url


def _config(url: str, *points: PointSpec, **kw: object) -> DriverConfig:
    settings: dict = {"runs": 2, "metrics_interval_s": 0.01, **kw}
    return DriverConfig(
        base_url=url, model=MODEL, points=points, tokenizer_dir=TOKENIZER_DIR, **settings
    )


def _result(events: list) -> PointResult:
    return next(e.result for e in events if isinstance(e, PointFinished))


@pytest.mark.timing
async def test_warm_point_sends_context_then_context_plus_prompt(
    fake: tuple[FakeEngine, str],
) -> None:
    engine, url = fake
    driver = BuiltinDriver(_config(url, PointSpec(depth=2000, concurrency=2, pp=256, tg=16)))
    events = [e async for e in driver.events()]
    # the client's own warm-up requests come first: a user turn, then a system turn + probe
    warmup, probe, *requests = engine.requests
    assert warmup["max_tokens"] == 4 and warmup["messages"][0]["content"].startswith("Warmup")
    assert [m["role"] for m in probe["messages"]] == ["system", "user"]
    # the point's warm-up run + 2 runs, each a context load and an inference batch of 2
    assert len(requests) == 3 * 2 * 2
    load, inference = requests[0], requests[2]
    assert load["messages"][-1]["content"] == "."
    # adapt-prompt: the fake engine counts 10 tokens per message on top of its text, so the
    # context is trimmed by the system turn's and the probe turn's 20 to land on 2000 tokens
    assert tokens(load["messages"][0]["content"]) == 2000 - 20
    assert inference["messages"][0]["content"] == load["messages"][0]["content"]
    assert tokens(inference["messages"][1]["content"]) == 256
    finished = [e for e in events if isinstance(e, PointFinished)]
    assert len(finished) == 1
    result = finished[0].result
    assert result.inference is not None and result.context is not None
    assert result.inference.requests == 4 and result.inference.errors == 0
    # 16 tokens at ≤ 100 t/s per stream (sleep overshoot on a loaded host lowers it); the total
    # of two streams is nearly twice one stream
    assert result.inference.tg_req is not None and 40 < result.inference.tg_req.mean < 105
    assert result.tg is not None and result.tg > 1.5 * result.inference.tg_req.mean
    assert any(isinstance(e, RequestProgress) and e.done for e in events)
    assert not result.flags


async def test_cold_point_is_one_request_with_unique_prompt(fake: tuple[FakeEngine, str]) -> None:
    engine, url = fake
    spec = PointSpec(depth=1000, concurrency=1, pp=128, tg=8, cold=True)
    [e async for e in BuiltinDriver(_config(url, spec)).events()]
    requests = engine.requests[2:]  # after the two warm-up requests
    assert len(requests) == 3
    contents = [r["messages"][1]["content"] for r in requests]
    assert all(tokens(c) == 128 for c in contents) and len(set(contents)) == 3


@pytest.mark.timing
async def test_time_scale_turns_wall_rates_into_engine_rates(fake: tuple[FakeEngine, str]) -> None:
    _, url = fake
    spec = PointSpec(depth=0, concurrency=1, pp=64, tg=24)
    plain = BuiltinDriver(_config(url, spec))
    scaled = BuiltinDriver(_config(url, spec, time_scale=10.0))
    a = _result([e async for e in plain.events()])
    b = _result([e async for e in scaled.events()])
    assert a.tg is not None and b.tg is not None
    assert b.tg == pytest.approx(a.tg / 10, rel=0.3)


async def test_hang_is_detected_recorded_retried_and_skipped(fake: tuple[FakeEngine, str]) -> None:
    engine, url = fake
    engine.hang = True
    points = (PointSpec(0, 1, 64, 8), PointSpec(0, 2, 64, 8))
    driver = BuiltinDriver(_config(url, *points, hang_timeout_s=0.6, warmup=False, runs=1))
    events = []
    async for event in driver.events():
        events.append(event)
        if isinstance(event, PointStarted) and event.index == 1:
            engine.hang = False  # the second point finds a healthy engine
    warnings = [e for e in events if isinstance(e, BenchWarning) and e.hang]
    assert len(warnings) == 2 and "retrying once" in warnings[0].message
    assert "skipped" in warnings[1].message
    first, second = (e.result for e in events if isinstance(e, PointFinished))
    assert first.skipped and first.has(FlagKind.HUNG)
    assert len(first.hangs) == 2 and first.hangs[0].action == "skipped"
    forensics = first.hangs[0].forensics
    assert "connections to the engine port" in forensics and "ESTABLISHED" in forensics
    assert "stream_chat" in forensics  # our own task's stack
    assert not second.skipped and second.tg
    await asyncio.sleep(0)
    assert engine.running == 0


async def test_points_beyond_max_model_len_are_skipped_and_reported(
    fake: tuple[FakeEngine, str], tmp_path: Path
) -> None:
    """A 32K lane does not get 64K requests to fail: the points are skipped and the report says so."""
    engine, url = fake
    fits, deep = PointSpec(0, 1, 128, 8), PointSpec(65536, 1, 128, 8)
    req = BenchRequest(
        lane="small", cluster="sim", label="fit", endpoint=url, points=(fits, deep),
        tokenizer_dir=TOKENIZER_DIR, reports_dir=tmp_path, runs=1, warmup=False,
        max_model_len=32768,
    )  # fmt: skip
    assert beyond_context(req.points, 32768) == [deep]
    events = [e async for e in bench(req)]
    finished = [e.result.spec for e in events if isinstance(e, PointFinished)]
    assert finished == [fits]
    [skip] = [e for e in events if isinstance(e, BenchWarning) and e.point == deep]
    assert "65672 tokens exceed the lane's max-model-len 32768" in skip.message
    written = Path(events[-1].report_json)
    report = load_report(written)
    assert any("skipped" in w for w in report.warnings)
    beside = {p.name for p in tmp_path.iterdir() if p.stem == written.stem}
    assert beside == {
        written.with_suffix(s).name for s in (".json", ".md", ".svg", ".png", ".html")
    }
    assert report.plan == SweepPlan((0, 65536), (1,), 128, 8, runs=1)  # as asked, skipped too
    assert engine.requests and all(len(json.dumps(body)) < 100_000 for body in engine.requests)


async def test_a_plan_with_no_point_inside_the_lanes_context_is_refused(
    fake: tuple[FakeEngine, str], tmp_path: Path
) -> None:
    """Nothing to measure: refused in one line, as the TUI's plan editor refuses it, not a
    driver crash on an empty sweep leaving an empty PARTIAL report."""
    engine, url = fake
    req = BenchRequest(
        lane="small", cluster="sim", label="fit", endpoint=url,
        points=SweepPlan(depths=(65536,), pp=128, tg=8).points, tokenizer_dir=TOKENIZER_DIR,
        reports_dir=tmp_path, runs=1, warmup=False, max_model_len=32768,
    )  # fmt: skip
    with pytest.raises(InputError, match="no point fits the lane's max-model-len 32768"):
        [e async for e in bench(req)]
    assert not list(tmp_path.iterdir())
    assert not [body for body in engine.requests if "messages" in body]


async def _tg_of(engine: FakeEngine, spec: PointSpec) -> PointResult:
    async with served(engine.app()) as url:
        return _result([e async for e in BuiltinDriver(_config(url, spec, runs=3)).events()])


@pytest.mark.timing
async def test_bursts_and_empty_text_token_id_chunks_give_the_same_tg() -> None:
    """Real vLLM on a busy host: several chunks per socket read, and chunks whose text is empty
    but whose token ids count. The tg must be the one a plain one-chunk-per-token stream gives
    (counting text chunks read ~18 % low; stamping each chunk of a read apart read bursts as
    thousands of t/s)."""
    spec = PointSpec(depth=0, concurrency=1, pp=64, tg=40)
    plain = await _tg_of(FakeEngine(tg_tps=100.0), spec)
    real_like = await _tg_of(FakeEngine(tg_tps=100.0, burst=4, empty_every=5), spec)
    assert plain.tg is not None and real_like.tg is not None
    assert real_like.tg == pytest.approx(plain.tg, rel=0.1), (plain.tg, real_like.tg)
    assert not real_like.flags and real_like.inference is not None
    assert real_like.inference.dropped == 0


async def test_a_run_whose_tokens_came_at_once_is_dropped_counted_and_flagged() -> None:
    # requests: 2 warm-up, the point's warm-up run, then runs 1..3: run 2 is request 4, whose
    # tokens after the first come in one write: its decode was not observable
    spec = PointSpec(depth=0, concurrency=1, pp=64, tg=32)
    result = await _tg_of(FakeEngine(tg_tps=100.0, collapse=frozenset({4})), spec)
    inference = result.inference
    assert inference is not None and inference.dropped == 1
    assert inference.tg is not None and len(inference.tg.values) == 2
    assert inference.tg.mean < 150  # the microsecond "decode" is not averaged in
    [flag] = [f for f in result.flags if f.kind is FlagKind.UNOBSERVABLE]
    assert "1 of 3 runs dropped" in flag.message and "run 2: stream 1" in flag.message


async def test_latency_is_measured_per_point(fake: tuple[FakeEngine, str]) -> None:
    _, url = fake
    points = (PointSpec(0, 1, 32, 4), PointSpec(0, 2, 32, 4))
    events = [e async for e in BuiltinDriver(_config(url, *points, runs=1)).events()]
    measured = [e for e in events if isinstance(e, LatencyMeasured)]
    assert [e.point for e in measured] == list(points)
    finished = [e.result for e in events if isinstance(e, PointFinished)]
    assert all(r.latency_ms is not None and r.latency_ms > 0 for r in finished)


async def test_a_cancelled_sweep_writes_a_partial_report(
    fake: tuple[FakeEngine, str], tmp_path: Path
) -> None:
    _, url = fake
    points = (PointSpec(0, 1, 32, 8), PointSpec(0, 2, 32, 400))
    req = BenchRequest(
        lane="lane", cluster="c", label="cut", endpoint=url, points=points,
        tokenizer_dir=TOKENIZER_DIR, reports_dir=tmp_path, runs=1, warmup=False,
    )  # fmt: skip

    async def consume() -> None:
        async for event in bench(req):
            if isinstance(event, PointFinished):
                first.set()

    first = asyncio.Event()
    task = asyncio.create_task(consume())
    await first.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    [path] = tmp_path.glob("*_cut.json")
    report = load_report(path)
    assert report.partial.startswith("sweep cancelled after 1 points")
    assert [p.spec for p in report.points] == [points[0]]
    assert path.with_suffix(".md").read_text().startswith("# PARTIAL Bench")


async def test_endpoint_max_model_len_skips_points_and_no_field_sets_the_time_scale(
    tmp_path: Path,
) -> None:
    engine = FakeEngine(max_model_len=2048, status_speed=20.0)
    points = (PointSpec(0, 1, 64, 8), PointSpec(4096, 1, 64, 8))
    async with served(engine.app()) as url:
        req = BenchRequest(
            lane="lane", cluster="", label="mml", endpoint=url, points=points,
            tokenizer_dir=TOKENIZER_DIR, reports_dir=tmp_path, runs=1, warmup=False,
        )  # fmt: skip
        events = [e async for e in bench(req)]
    notes = [e.message for e in events if isinstance(e, BenchWarning)]
    assert any("exceed the lane's max-model-len 2048" in n for n in notes), notes
    report = load_report(next(tmp_path.glob("*_mml.json")))
    assert [p.spec for p in report.points] == [points[0]]
    # a real endpoint's `speed` field never rescales the figures
    assert report.environment.time_scale == 1.0
    assert report.environment.engine_image == "sparkring@sha256:abc"


def test_llama_benchy_is_found_beside_the_interpreter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cockpit.bench.benchy import find_script
    from cockpit.errors import InputError

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    with pytest.raises(InputError, match="no llama-benchy script beside"):
        find_script(str(venv_bin / "python3"))
    script = venv_bin / "llama-benchy"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert find_script(str(venv_bin / "python3")) == str(script)


@pytest.mark.usefixtures("collector_paused")  # main() pauses the collector, as the script does
async def test_cli_without_llama_benchy_says_why_in_one_line(
    fake: tuple[FakeEngine, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from cockpit.cli import main

    _, url = fake
    monkeypatch.setattr("sys.executable", str(tmp_path / "bin" / "python3"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    argv = ["cockpit", "bench", "--endpoint", url, "--tokenizer", str(TOKENIZER_DIR)]
    argv += ["--label", "x", "--depths", "0", "--driver", "llama-benchy"]
    argv += ["--reports", str(tmp_path)]
    monkeypatch.setattr("sys.argv", argv)
    with pytest.raises(SystemExit) as exit_:
        await asyncio.to_thread(main.main)  # its own event loop; the fake engine runs on ours
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "no llama-benchy script beside" in err and "Traceback" not in err
    assert len(err.splitlines()) == 1
