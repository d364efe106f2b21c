"""A flood of log and NCCL lines (tens of thousands a second): the app keeps answering keys, its
buffers stay bounded, the newest line is on screen and the shed lines are counted."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from statistics import median

import pytest

from cockpit.tui.app import CockpitApp
from cockpit.tui.feeds.fleet import TICK_S, LineTail
from cockpit.tui.state import RankLines, RankOnNode, StoreInput
from cockpit.tui.state.store import LOG_LINES, NCCL_LINES
from cockpit.tui.state.views import LogSource
from cockpit.tui.widgets.logs import LOG_MAX_LINES, NCCL_MAX_LINES
from cockpit.tui.widgets.tail import TailLog
from tests.tui import scene

RATE = 50_000  # lines per second offered, over two ranks
NCCL = "spark-9f8f:315:401 [0] NCCL INFO Channel 01/0 : 1[0] -> 0[0] [receive] via NET/IB/1"
WARN = "spark-506c:250:292 [0] NCCL WARN NET/IB : Got async event : port error"
LOG_LINES_TEXT = tuple(f"(APIServer pid=1) INFO line {i}" for i in range(10_007))


class FloodFeed:
    """Shaped like the live feed: a producer fills its per-container `LineTail`s (here a thread at
    RATE lines/s, there the SSH channels) and every tick hands the newest lines to the app."""

    name = "flood"

    def __init__(self, max_seconds: float) -> None:
        self.max_seconds = max_seconds
        self.seconds = 0.0  # how long it flooded
        self.offered = 0
        self.last_log = ""
        self.logs = LineTail(RankOnNode(scene.LANE, scene.CLUSTER, 0))
        self.nccl = LineTail(RankOnNode(scene.LANE, scene.CLUSTER, 1))
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.stop = threading.Event()
        self.go = asyncio.Event()  # the test measures quiet key latencies first

    def _produce(self) -> None:
        """RATE lines/s whatever the scheduler does: each wake-up catches up with the clock."""
        start = time.monotonic()
        n = 0
        while time.monotonic() < start + self.max_seconds and not self.stop.is_set():
            due = int(RATE / 2 * (time.monotonic() - start)) - n
            with self.lock:
                for _ in range(due):
                    self.last_log = LOG_LINES_TEXT[n % len(LOG_LINES_TEXT)]
                    self.logs.push(self.last_log)
                    self.nccl.push(WARN if n % 100 == 0 else NCCL)
                    n += 1
            self.offered += 2 * due
            time.sleep(0.01)
        self.seconds = time.monotonic() - start
        self.done.set()

    async def batches(self) -> AsyncIterator[Sequence[StoreInput]]:
        await self.go.wait()
        threading.Thread(target=self._produce, daemon=True).start()
        while True:
            finished = self.done.is_set()
            with self.lock:
                (logs, log_drops), (nccl, nccl_drops) = self.logs.take(), self.nccl.take()
            yield [
                RankLines("dgx5", scene.LANE, scene.CLUSTER, 0, logs, 0.0, log_drops),
                RankLines("dgx6", scene.LANE, scene.CLUSTER, 1, nccl, 0.0, nccl_drops),
            ]
            if finished:
                return
            await asyncio.sleep(TICK_S)


@pytest.mark.timing  # a key's answer within 3 s of wall time while lines pour in
async def test_keys_answer_during_a_line_flood(make_app: Callable[..., CockpitApp]) -> None:
    feed = FloodFeed(max_seconds=30.0)
    app = make_app(feeds=[feed], clock=time.time)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.5)
        screen = app.screen

        async def answer(key: str, done: Callable[[], bool]) -> float:
            """Seconds from the key event to its effect in the app's state."""
            start = time.perf_counter()
            app.simulate_key(key)
            while not done() and time.perf_counter() - start < 10:
                await asyncio.sleep(0.005)
            await asyncio.sleep(0.2)
            return time.perf_counter() - start - 0.2

        async def latencies() -> list[float]:
            out = []
            for _ in range(2):
                out.append(await answer("m", lambda: screen.maximized is not None))
                out.append(await answer("m", lambda: screen.maximized is None))
                theme, focused = app.theme, app.focused
                out.append(await answer("t", lambda theme=theme: app.theme != theme))
                out.append(await answer("tab", lambda f=focused: app.focused is not f))
            return out

        quiet = await latencies()
        feed.go.set()
        await asyncio.sleep(0.5)
        flooded = await latencies()
        feed.stop.set()
        await app.workers.wait_for_complete()
        await pilot.pause(0.3)
        assert feed.offered / feed.seconds > 20_000, (feed.offered, feed.seconds)
        # a key costs up to ~1 s here even when quiet (2 shared cores); the flood must not add much
        assert median(flooded) < 2 * median(quiet) + 0.5, (quiet, flooded)
        assert max(flooded) < 3.0, flooded
        assert screen.maximized is None and app.theme != "cockpit-dark"
        snap = app.store.snapshot(time.time())
        head = LogSource(f"{scene.LANE}@{scene.CLUSTER}", "dgx5", 0)
        assert len(snap.nccl[head.lane]) == NCCL_LINES and len(snap.logs[head]) == LOG_LINES
        assert snap.dropped[head] > 0  # shed lines are counted, not silently lost
        tails = {t.id: t for t in screen.query(TailLog)}
        assert 0 < tails["nccl-log"].line_count <= NCCL_MAX_LINES
        assert 0 < tails["log-tail"].line_count <= LOG_MAX_LINES
        assert tails["log-tail"].lines[-1] == feed.last_log  # the newest line is on screen
