"""The built-in driver against a tiny streaming server: method, events, watchdog, no leftovers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from cockpit.bench.artifacts import load_report
from cockpit.bench.events import BenchWarning, PointFinished, PointStarted, RequestProgress
from cockpit.bench.models import FlagKind, PointResult, PointSpec
from cockpit.bench.run import BenchRequest, bench, beyond_context
from cockpit.bench.sweep import BuiltinDriver, DriverConfig
from cockpit.sim.engine.text import TOKENIZER_DIR
from cockpit.sim.engine.text import encode as _encode
from tests.bench.fake_engine import MODEL, FakeEngine


def tokens(content: str) -> int:
    """Length in the engine tokenizer's tokens (the bench cuts prompts in them)."""
    return len(_encode(content))


@pytest.fixture
async def fake() -> AsyncIterator[tuple[FakeEngine, str]]:
    engine = FakeEngine()
    runner = web.AppRunner(engine.app(), shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield engine, f"http://127.0.0.1:{port}"
    await runner.cleanup()


def _config(url: str, *points: PointSpec, **kw: object) -> DriverConfig:
    settings: dict = {"runs": 2, "metrics_interval_s": 0.01, **kw}
    return DriverConfig(
        base_url=url, model=MODEL, points=points, tokenizer_dir=TOKENIZER_DIR, **settings
    )


def _result(events: list) -> PointResult:
    return next(e.result for e in events if isinstance(e, PointFinished))


async def test_warm_point_sends_context_then_context_plus_prompt(
    fake: tuple[FakeEngine, str],
) -> None:
    engine, url = fake
    driver = BuiltinDriver(_config(url, PointSpec(depth=2000, concurrency=2, pp=256, tg=16)))
    events = [e async for e in driver.events()]
    warmup, *requests = engine.requests  # the client's own warm-up request comes first
    assert warmup["max_tokens"] == 4 and warmup["messages"][0]["content"].startswith("Warmup")
    # the point's warm-up run + 2 runs, each a context load and an inference batch of 2
    assert len(requests) == 3 * 2 * 2
    load, inference = requests[0], requests[2]
    assert load["messages"][-1]["content"] == "."
    assert tokens(load["messages"][0]["content"]) == 2000
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
    requests = engine.requests[1:]
    assert len(requests) == 3
    contents = [r["messages"][1]["content"] for r in requests]
    assert all(tokens(c) == 128 for c in contents) and len(set(contents)) == 3


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
    report = load_report(Path(events[-1].report_json))
    assert any("skipped" in w for w in report.warnings)
    assert engine.requests and all(len(json.dumps(body)) < 100_000 for body in engine.requests)
