"""A flood of log and NCCL lines (tens of thousands a second): the app keeps answering keys and
its buffers stay bounded."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sequence

from cockpit.tui.app import CockpitApp
from cockpit.tui.state import RankLines, StoreInput
from cockpit.tui.state.store import LOG_LINES, NCCL_LINES
from cockpit.tui.widgets.logs import LOG_MAX_LINES, NCCL_MAX_LINES
from cockpit.tui.widgets.tail import TailLog
from tests.tui import scene

BATCH = 2500  # lines per rank per batch
EVERY_S = 0.05  # two ranks → 100k lines/s offered
NCCL = "spark-9f8f:315:401 [0] NCCL INFO Channel 01/0 : 1[0] -> 0[0] [receive] via NET/IB/1"
WARN = "spark-506c:250:292 [0] NCCL WARN NET/IB : Got async event : port error"


class FloodFeed:
    name = "flood"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.sent = 0

    async def batches(self) -> AsyncIterator[Sequence[StoreInput]]:
        end = time.monotonic() + self.seconds
        n = 0
        while time.monotonic() < end:
            logs = tuple(f"(APIServer pid=1) INFO line {n + i}" for i in range(BATCH))
            nccl = tuple(WARN if i % 100 == 0 else NCCL for i in range(BATCH))
            n += BATCH
            self.sent += 2 * BATCH
            yield [
                RankLines("dgx5", scene.LANE, scene.CLUSTER, 0, logs),
                RankLines("dgx6", scene.LANE, scene.CLUSTER, 1, nccl),
            ]
            await asyncio.sleep(EVERY_S)


async def test_keys_answer_during_a_line_flood(make_app: Callable[..., CockpitApp]) -> None:
    feed = FloodFeed(seconds=4.0)
    app = make_app(feeds=[feed], clock=time.time)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.5)
        screen = app.screen
        latencies = []
        for key in ("m", "m", "t", "tab", "m", "m"):
            start = time.perf_counter()
            await pilot.press(key)
            latencies.append(time.perf_counter() - start)
            await asyncio.sleep(0.2)
        await app.workers.wait_for_complete()
        await pilot.pause(0.2)
        elapsed = 4.0
        assert feed.sent / elapsed > 20_000, feed.sent
        assert max(latencies) < 1.5, latencies
        assert screen.maximized is None and app.theme != "cockpit-dark"
        snap = app.store.snapshot(time.time())
        assert len(snap.nccl) == NCCL_LINES and len(snap.logs[("dgx5", 0)]) == LOG_LINES
        tails = {t.id: t for t in screen.query(TailLog)}
        assert 0 < tails["nccl-log"].line_count <= NCCL_MAX_LINES
        assert 0 < tails["log-tail"].line_count <= LOG_MAX_LINES
        assert tails["nccl-log"].lines[-1].endswith(NCCL) or "WARN" in tails["nccl-log"].lines[-1]
