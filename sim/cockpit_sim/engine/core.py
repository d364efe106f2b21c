"""The engine loop in scaled real time: the pure scheduler, stepped against an engine clock.

The engine clock is wall time since start × `speed`. One step = `scheduler.step(start)`, sleep
until the clock reaches the step's end, then hand the step's tokens to the requests' queues. Steps
start where the previous one ended, never where the wall clock happens to be: after a stall of
the event loop (a slow handler, a GC pause) the engine runs its steps back to back until it has
caught up, so a stall delays tokens but loses no engine time and leaves rates intact. The first
step after idling is dated from the earliest request's receipt, which hides the server's own
parsing (the clock resumes from the wall clock after it); a request joins the first step that
starts within `ARRIVAL_SLACK_WALL_S` of its receipt.

Engine time runs `speed` times faster than wall time: every figure the engine reports (log
throughputs, /metrics latencies) is in engine seconds, while a client timing the stream with its
own clock measures `speed` × the rates (bench code divides by the speed that
`/v1/sparkring/status/view` and the `X-Sparkring-Sim-Speed` header expose). Client-side wall
costs are multiplied too (a 50 ms skew between two requests is 1 s of engine time at speed 20):
keep long-context benches at speeds of about 20 or less.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from cockpit_sim.engine.cost_model import gpu_utilisation
from cockpit_sim.engine.metrics import EngineMetrics
from cockpit_sim.engine.scheduler import Request, Scheduler, StepResult
from cockpit_sim.engine.stats import StatsLog

CATCH_UP_WALL_S = 0.5
"""How far (wall) the engine clock may fall behind wall time × speed and still catch up; beyond
it the engine is overloaded at this speed (Python cannot keep pace) and skips ahead."""
ARRIVAL_SLACK_WALL_S = 0.05
"""How far back a request's receipt may date the step that first schedules it."""
GATHER_WALL_S = 0.02
"""After idling, wait this long (wall) before the first step so requests sent together (a c2 pair,
still being parsed and tokenised by this single-threaded server) land in the same step, as they do
on a real engine; the wait is hidden by dating steps from the requests' receipt."""


@dataclass(frozen=True)
class Output:
    """New tokens of one request from one step; `finish_reason` set on its last output."""

    count: int
    first: bool
    finish_reason: str | None


class EngineCore:
    def __init__(self, scheduler: Scheduler, speed: float, metrics: EngineMetrics) -> None:
        self.scheduler = scheduler
        self.speed = speed
        self.metrics = metrics
        self.stats = StatsLog(0.0)
        self.phase = "idle"
        self.util = 0.0
        self.hung = False
        self.started = time.monotonic()
        self.steps = 0
        self._clock = 0.0
        self._catch_up = CATCH_UP_WALL_S * speed
        self._arrival_slack = ARRIVAL_SLACK_WALL_S * speed
        self._queues: dict[str, asyncio.Queue[Output]] = {}
        self._last_output: dict[str, float] = {}
        self._wake = asyncio.Event()
        self.first_request = asyncio.Event()
        self.first_finished = asyncio.Event()  # a request was answered to its end

    def now(self) -> float:
        """Engine seconds since the engine started serving."""
        return (time.monotonic() - self.started) * self.speed

    def submit(self, request: Request, received: float | None = None) -> asyncio.Queue[Output]:
        """Queue a request that reached the server at engine time `received` (default: now).

        Giving the receipt time hides the server's own parsing and tokenising (wall time that
        the speed would otherwise blow up into engine seconds) inside the engine's clock slack.
        """
        now = self.now()
        arrival = now if received is None else max(min(received, now), now - self._arrival_slack)
        request.arrival = arrival
        queue: asyncio.Queue[Output] = asyncio.Queue()
        self._queues[request.request_id] = queue
        self.scheduler.add(request)
        self.first_request.set()
        self._wake.set()
        return queue

    def abort(self, request_id: str) -> None:
        request = self.scheduler.abort(request_id, self.now())
        self._queues.pop(request_id, None)
        self._last_output.pop(request_id, None)
        if request is not None:
            self.metrics.on_finished(request)

    async def run(self) -> None:
        while True:
            if self.hung or not self.scheduler.has_work:
                self.phase, self.util = ("decode", 1.0) if self.hung else ("idle", 0.0)
                self._wake.clear()
                await self._wake.wait()
                await asyncio.sleep(GATHER_WALL_S)
                continue
            fresh = not self.scheduler.running
            start = self._next_start()
            result = self.scheduler.step(start, admit_until=start + self._arrival_slack)
            if result.duration <= 0:
                self._wake.clear()
                await self._wake.wait()
                continue
            self.phase, self.util = result.phase, gpu_utilisation(result.shape)
            end = start + result.duration
            now = self.now()
            # A first step dated from a receipt hides the server's own latency: what of it the
            # step did not cover is skipped, not caught up (that would burst the first tokens).
            self._clock = max(end, now) if fresh else end
            await asyncio.sleep(max(0.0, (end - now) / self.speed))
            self.steps += 1
            self._deliver(result, end)

    def _next_start(self) -> float:
        """Where the next step starts: the end of the previous one (catching up after a stall),
        or the receipt of the queue's head once nothing runs; never more than the catch-up
        window behind the wall clock."""
        start = self._clock
        if not self.scheduler.running:
            start = max(start, self.scheduler.waiting[0].arrival)
        return max(start, self.now() - self._catch_up)

    def _deliver(self, result: StepResult, end: float) -> None:
        gaps: list[float] = []
        finished = {r.request_id: r for r in result.finished}
        for event in result.tokens:
            previous = self._last_output.get(event.request_id)
            if previous is not None:
                gaps.append(end - previous)
            self._last_output[event.request_id] = end
            request = finished.get(event.request_id) or self.scheduler.requests.get(
                event.request_id
            )
            if event.first and request is not None:
                self.metrics.on_first_token(request)
            queue = self._queues.get(event.request_id)
            if queue is not None:
                reason = request.finish_reason if event.request_id in finished else None
                queue.put_nowait(Output(event.count, event.first, reason))
        for request in result.finished:
            self.first_finished.set()
            self.metrics.on_finished(request)
            self._queues.pop(request.request_id, None)
            self._last_output.pop(request.request_id, None)
        s = self.scheduler
        self.metrics.on_step(result, len(s.running), len(s.waiting), s.pool.usage, gaps)
        self.stats.record(result)
