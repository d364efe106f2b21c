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

from cockpit.backoff import Backoff
from cockpit.ssh import Link, NodeState, SshError, SshPool
from cockpit.ssh.stream import LineStream
from cockpit.status.probe import NodeFacts, Pace, ProbeParser, probe_script

RETRY_FLOOR_S = 0.5  # pause between two attempts when the pool would try at once
PROBE_HEALTHY_S = 10.0  # a probe that streamed this long restarts without growing its pause
PROBE_BACKOFF = Backoff()


def probe_pause(young_deaths: int) -> float:
    """Seconds before the next probe after this many in a row died young (a long-lived one at
    once: the floor): a node that cannot keep its probe up is asked ever more slowly."""
    return max(RETRY_FLOOR_S, PROBE_BACKOFF.delay(young_deaths))


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
        self._streams: dict[str, LineStream] = {}  # each node's open probe stream
        self._asks = 0  # the last ask number sent (one sequence for every node)
        self._asked: dict[str, int] = {}  # node → the last ask number sent to it

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

    def refresh(self, node: str) -> int:
        """Ask the node's probe for its slow facts (containers, memory, apps) now rather than at
        its next cycle: an operation just changed what runs there, or a verdict wants a round
        read after it. Returns the ask's number: the node's facts were read after it once their
        `asked` reaches it (a probe that restarts meanwhile is asked again)."""
        self._asks += 1
        self._asked[node] = self._asks
        stream = self._streams.get(node)
        if stream is not None:
            stream.poke(str(self._asks))
        return self._asks

    def facts(self) -> Mapping[str, NodeFacts]:
        return dict(self._facts)

    def links(self) -> dict[str, NodeState]:
        return {node: self._pool.state(node) for node in self._nodes}

    async def wait_first_round(self, idle_s: float, cap_s: float | None = None) -> bool:
        """Until every node has complete facts, a failed probe or no link (True), or until no
        node's facts moved for `idle_s` (a fact kind arriving or failing is progress: GPU samples
        that keep coming are not), or `cap_s` in all (default 4 × `idle_s`) (False: the answer is
        incomplete)."""
        cap_s = 4 * idle_s if cap_s is None else cap_s
        loop = asyncio.get_running_loop()
        started = loop.time()
        known, deadline = self._known(), started + idle_s
        while not self._first_round_done():
            now = loop.time()
            if known != (known := self._known()):
                deadline = now + idle_s
            wait = min(deadline, started + cap_s) - now
            if wait <= 0:
                return False
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._changed.wait()
        return True

    def _known(self) -> int:
        """How many facts the nodes have sent or failed so far (a measure of progress)."""
        links = self.links()
        return sum(
            f.known_kinds() + (f.probe_error is not None) + (links[n].link is Link.UNREACHABLE)
            for n, f in self._facts.items()
        )

    def _first_round_done(self) -> bool:
        links = self.links()
        return all(
            self._facts[n].complete
            or self._facts[n].probe_error is not None
            or links[n].link is Link.UNREACHABLE
            for n in self._nodes
        )

    async def _follow(self, node: str) -> None:
        young_deaths = 0
        while True:
            parser = ProbeParser()
            opened = time.monotonic()
            problem = "probe ended"
            try:
                async with self._pool.stream(node, self._script) as lines:
                    self._streams[node] = lines
                    if self._asked.get(node, 0) > self._facts[node].asked:
                        lines.poke(str(self._asked[node]))  # the last stream ended unanswered
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
            finally:
                self._streams.pop(node, None)
            self._facts[node] = replace(self._facts[node], probe_error=problem)
            self._changed.set()
            young = time.monotonic() - opened <= PROBE_HEALTHY_S
            young_deaths = young_deaths + 1 if young else 0
            wait_link = self._pool.state(node).retry_at - time.monotonic()
            await self._pause(node, max(wait_link, probe_pause(young_deaths)))

    async def _pause(self, node: str, seconds: float) -> None:
        """Wait before the next probe; a node whose link was down and that another user of the
        pool reconnected meanwhile (an operation the operator started) is probed at once."""
        until = time.monotonic() + seconds
        link_was_down = self._pool.state(node).link is not Link.CONNECTED
        while (left := until - time.monotonic()) > 0:
            if link_was_down and self._pool.state(node).link is Link.CONNECTED:
                return
            await asyncio.sleep(min(left, RETRY_FLOOR_S))
