"""The demo's synthetic load: bounded (never more requests in flight than its streams), steady,
and paused rather than hammering an engine that fails."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from cockpit.bench.load import LoadCount, LoadShape, steady_load
from tests.bench.fake_engine import FakeEngine, served


@pytest.fixture
async def engine() -> AsyncIterator[tuple[FakeEngine, str]]:
    fake = FakeEngine(tg_tps=2_000.0)
    async with served(fake.app()) as url:
        yield fake, url


async def test_the_load_keeps_its_streams_busy_and_never_more(
    engine: tuple[FakeEngine, str],
) -> None:
    fake, url = engine
    shape = LoadShape(streams=2, max_tokens=16, pause_s=(0.0, 0.01))
    count, peak = LoadCount(), 0
    task = asyncio.create_task(steady_load(url, count, shape))
    for _ in range(100):
        await asyncio.sleep(0.01)
        peak = max(peak, fake.running)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert count.ok >= 4 and count.failed == 0
    assert peak == 2  # both streams ran at once, and never a third request
    first = fake.requests[0]
    assert first["max_tokens"] == 16 and first["messages"][0]["content"].strip()


async def test_a_failing_engine_is_counted_and_paused_on() -> None:
    async def refuse(request: web.Request) -> web.Response:
        if request.path == "/v1/models":
            return web.json_response({"data": [{"id": "m"}]})
        return web.Response(status=503)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", refuse)
    count = LoadCount()
    shape = LoadShape(streams=1, pause_s=(0.0, 0.2))  # a failure waits 5 × 0.2 s
    async with served(app) as url:
        task = asyncio.create_task(steady_load(url, count, shape))
        await asyncio.sleep(0.5)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert count.failed == 1 and "503" in count.last_error
