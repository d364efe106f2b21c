"""`cockpit demo`'s opening act: one lane launched as soon as the fleet answers, and a light
synthetic load on it while it serves, so every pane is alive before the newcomer presses a key.
The other lanes stay stopped for them to try."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from cockpit.bench.load import LoadCount, LoadShape, steady_load
from cockpit.tui.operations import LaneTarget
from cockpit.tui.state.views import LanePhase, LaneView

WATCH_S = 0.5  # how often the load looks whether its lane (still) serves
RETRY_S = 5.0  # after the load itself failed (e.g. the engine refused its first request)


Load = Callable[[str, LoadCount, LoadShape, str | None], Awaitable[None]]
"""A load on an endpoint, with the lane's API key, until cancelled (`steady_load`; tests give a
stand-in)."""


@dataclass(frozen=True)
class Demo:
    lane: LaneTarget
    shape: LoadShape = field(default_factory=LoadShape)
    load: Load = steady_load
    api_key: str | None = field(default=None, repr=False)  # the lane's (`cockpit.api_key`)


async def load_while_serving(
    lane_of: Callable[[], LaneView | None],
    demo: Demo,
    count: LoadCount,
    say: Callable[[str], None],
) -> None:
    """Run the load whenever the lane serves (as observed), pause it when it does not; until
    cancelled. A lane the operator stops pauses the load rather than failing its requests."""
    while True:
        lane = lane_of()
        if lane is None or lane.phase is not LanePhase.SERVING or not lane.endpoint:
            await asyncio.sleep(WATCH_S)
            continue
        endpoint = lane.endpoint
        say(f"demo load: {demo.shape.streams} streams on {lane.key} (g stops it)")
        task = asyncio.create_task(demo.load(endpoint, count, demo.shape, demo.api_key))
        try:
            while not task.done():
                await asyncio.sleep(WATCH_S)
                now = lane_of()
                if now is None or now.phase is not LanePhase.SERVING or now.endpoint != endpoint:
                    say(f"demo load paused: {lane.key} is not serving")
                    break
        finally:
            task.cancel()
            await asyncio.wait([task])  # its own failure is read below, never raised here
        if task.done() and not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            say(f"demo load failed ({type(exc).__name__}: {exc}); retrying in {RETRY_S:g}s")
            await asyncio.sleep(RETRY_S)
