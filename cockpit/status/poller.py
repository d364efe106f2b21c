"""Keep one probe stream open per node and fold its frames into per-node facts.

A node that dies only stops its own task: the stream ends or fails, the facts keep their last
values (the view turns them STALE / DOWN), and the task reconnects when the pool's backoff allows.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

from cockpit.ssh import Link, NodeState, SshError, SshPool
from cockpit.status.probe import NodeFacts, Pace, ProbeParser, probe_script

RETRY_FLOOR_S = 0.5  # pause between two attempts when the pool would try at once
PROBE_HEALTHY_S = 10.0  # a probe that streamed this long restarts without growing its pause
PROBE_RETRY_CAP_S = 30.0


class FleetPoller:
    """Streams the probe on every node; `facts()` and `links()` are snapshots for the model."""

    def __init__(
        self,
        pool: SshPool,
        nodes: Iterable[str],
        pace: Pace | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._pool = pool
        self._nodes = list(nodes)
        self._script = probe_script(pace or Pace())
        self._clock = clock
        self._facts: dict[str, NodeFacts] = {node: NodeFacts() for node in self._nodes}
        self._tasks: list[asyncio.Task[None]] = []
        self._changed = asyncio.Event()

    async def __aenter__(self) -> FleetPoller:
        self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    def start(self) -> None:
        if not self._tasks:
            self._tasks = [asyncio.create_task(self._follow(node)) for node in self._nodes]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    def facts(self) -> Mapping[str, NodeFacts]:
        return dict(self._facts)

    def links(self) -> dict[str, NodeState]:
        return {node: self._pool.state(node) for node in self._nodes}

    async def wait_first_round(self, deadline_s: float) -> None:
        """Until every node has complete facts, a failed probe or no link, or until the deadline."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(deadline_s):
                while not self._first_round_done():
                    self._changed.clear()
                    await self._changed.wait()

    def _first_round_done(self) -> bool:
        links = self.links()
        return all(
            self._facts[n].complete
            or self._facts[n].probe_error is not None
            or links[n].link is Link.UNREACHABLE
            for n in self._nodes
        )

    async def _follow(self, node: str) -> None:
        pause = RETRY_FLOOR_S
        while True:
            parser = ProbeParser()
            opened = time.monotonic()
            problem = "probe ended"
            try:
                async with self._pool.stream(node, self._script) as lines:
                    self._changed.set()
                    async for line in lines:
                        frame = parser.feed(line)
                        if frame is not None:
                            self._facts[node] = self._facts[node].with_frame(frame, self._clock())
                            self._changed.set()
                    tail = next((t for t in reversed(lines.stderr_tail) if t.strip()), "")
                    if lines.exit_status is None:
                        problem = self._pool.state(node).error or "link lost"
                    else:
                        problem = f"probe ended (exit {lines.exit_status})"
                        problem += f": {tail}" if tail else ""
            except SshError as exc:
                problem = exc.reason
            self._facts[node] = replace(self._facts[node], probe_error=problem)
            self._changed.set()
            # a probe that dies young is retried ever more slowly; a long-lived one at once
            pause = RETRY_FLOOR_S if time.monotonic() - opened > PROBE_HEALTHY_S else pause * 2
            pause = min(pause, PROBE_RETRY_CAP_S)
            wait_link = self._pool.state(node).retry_at - time.monotonic()
            await asyncio.sleep(max(wait_link, pause))
