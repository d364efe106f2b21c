"""The live feed: the status poller's per-node facts, each lane container's log, each lane's
`/metrics`, folded into store inputs every 100 ms.

One long-lived probe channel per node (`cockpit.status.FleetPoller`), one `docker logs -f` channel
per lane container, one HTTP scrape loop per running lane. A node that stops answering only
stops its own channels; its facts stay and the store marks them STALE / DOWN.

Until the first node sample is out the feed looks at the poller every 10 ms instead of every tick:
the first probe lines reach the screen as soon as they arrive. httpx (and its TLS context) is
loaded when the first lane is seen running, not at start.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

from cockpit.config import Inventory
from cockpit.errors import CockpitError
from cockpit.plan import plan_lane
from cockpit.ssh import Link, NodeState, SshError, SshPool
from cockpit.status.poller import FleetPoller
from cockpit.status.probe import NodeFacts, Pace
from cockpit.telemetry.docker_out import image_with_digest, lane_of
from cockpit.telemetry.gpu import node_memory_view
from cockpit.telemetry.metrics import parse_metrics
from cockpit.tui.state.inputs import (
    EngineSampled,
    NodeLost,
    NodeSampled,
    RankLines,
    RankOnNode,
    StoreInput,
)

if TYPE_CHECKING:
    import httpx

TICK_S = 0.1
FIRST_TICK_S = 0.01  # until the first node sample is out
LOG_TAIL = 500  # lines of history fetched when a container's log is first followed
LOG_BUFFER = 1000  # newest lines kept per container between two ticks (10k lines/s each)
SCRAPE_S = 2.0
SCRAPE_TIMEOUT_S = 3.0


def lane_containers(facts: NodeFacts) -> list[tuple[str, RankOnNode]]:
    """The node's lane containers, (name, rank), from their `cockpit.*` labels."""
    out = []
    for row in facts.containers or ():
        label = lane_of(row.labels)
        if label is not None and label.rank is not None and label.cluster:
            running = (row.state or "running") == "running"
            out.append((row.names, RankOnNode(label.lane, label.cluster, label.rank, running)))
    return out


def node_input(
    node: str, facts: NodeFacts, link: NodeState, refs: Sequence[str], now: float
) -> StoreInput | None:
    """The store's view of one node's facts: a sample, a loss, or nothing yet."""
    if facts.probe_error or link.link is Link.UNREACHABLE:
        retry = max(link.retry_at - time.monotonic(), 0.0) if link.retry_at else None
        return NodeLost(node, now, facts.probe_error or link.error or "unreachable", retry)
    if facts.heard_at is None:
        return None
    gpus = [facts.gpus[i] for i in sorted(facts.gpus)]
    images = (
        None
        if facts.images is None
        else tuple(ref for ref in refs if image_with_digest(facts.images, ref) is not None)
    )
    return NodeSampled(
        node,
        facts.heard_at,
        gpus[0] if gpus else None,
        node_memory_view(gpus, facts.meminfo, facts.apps),
        tuple(rank for _, rank in lane_containers(facts)),
        images,
    )


class LineTail:
    """The newest lines of one stream since the last `take`, and how many older ones were shed."""

    def __init__(self, rank: RankOnNode, size: int = LOG_BUFFER) -> None:
        self.rank = rank
        self.lines: deque[str] = deque(maxlen=size)
        self.received = 0

    def push(self, line: str) -> None:
        self.lines.append(line)
        self.received += 1

    def take(self) -> tuple[tuple[str, ...], int]:
        lines = tuple(self.lines)
        dropped = self.received - len(lines)
        self.lines.clear()
        self.received = 0
        return lines, dropped


class FleetFeed:
    """Feed of a real (or simulated) fleet over SSH; `batches()` runs until cancelled."""

    name = "fleet"

    def __init__(
        self,
        inventory: Inventory,
        pool: SshPool,
        pace: Pace | None = None,
        scrape_s: float = SCRAPE_S,
        poller: FleetPoller | None = None,
    ) -> None:
        """`poller`: one already probing the inventory's nodes (started early, owned by the
        caller); without it the feed runs its own at `pace`."""
        self.inventory = inventory
        self.pool = pool
        self.pace = pace or Pace()
        self.poller = poller
        self.scrape_s = scrape_s
        self._refs = sorted({r.image.ref for r in inventory.recipes.values()})
        self._seen: dict[str, tuple[NodeFacts, NodeState]] = {}
        self._logs: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._tails: dict[tuple[str, str], LineTail] = {}
        self._scrapes: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._engine: list[StoreInput] = []
        self._sampled = False  # a NodeSampled went out
        self._http: httpx.AsyncClient | None = None

    async def batches(self) -> AsyncIterator[Sequence[StoreInput]]:
        async with AsyncExitStack() as stack:
            poller = self.poller or await stack.enter_async_context(
                FleetPoller(self.pool, list(self.inventory.nodes), self.pace)
            )
            try:
                while True:
                    batch = self._tick(poller)
                    if batch:
                        self._sampled = self._sampled or any(
                            isinstance(item, NodeSampled) for item in batch
                        )
                        yield batch
                    await asyncio.sleep(TICK_S if self._sampled else FIRST_TICK_S)
            finally:
                for task in [*self._logs.values(), *self._scrapes.values()]:
                    task.cancel()
                for task in [*self._logs.values(), *self._scrapes.values()]:
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await task
                self._logs.clear()
                self._scrapes.clear()
                if self._http is not None:
                    await self._http.aclose()
                    self._http = None

    def _tick(self, poller: FleetPoller) -> list[StoreInput]:
        now = time.time()
        facts, links = poller.facts(), poller.links()
        batch: list[StoreInput] = []
        containers: dict[tuple[str, str], RankOnNode] = {}
        heads: dict[tuple[str, str], str] = {}
        for node in facts:
            seen = (facts[node], links[node])
            if self._seen.get(node) != seen:
                self._seen[node] = seen
                item = node_input(node, facts[node], links[node], self._refs, now)
                if item is not None:
                    batch.append(item)
            for name, rank in lane_containers(facts[node]):
                containers[(node, name)] = rank
                if rank.rank == 0:
                    heads[(rank.lane, rank.cluster)] = node
        self._follow_logs(containers)
        self._scrape(heads)
        for (node, _), tail in self._tails.items():
            if tail.received:
                lines, dropped = tail.take()
                rank = tail.rank
                batch.append(
                    RankLines(node, rank.lane, rank.cluster, rank.rank, lines, now, dropped)
                )
        batch += self._engine
        self._engine = []
        return batch

    def _follow_logs(self, containers: dict[tuple[str, str], RankOnNode]) -> None:
        for key in list(self._logs):
            if key not in containers and self._logs[key].done():
                del self._logs[key]
        for key, rank in containers.items():
            if key not in self._logs:
                tail = self._tails[key] = LineTail(rank)
                self._logs[key] = asyncio.create_task(self._log(key, tail))

    async def _log(self, key: tuple[str, str], tail: LineTail) -> None:
        node, name = key
        command = ["docker", "logs", "-f", "--tail", str(LOG_TAIL), name]
        with contextlib.suppress(SshError):
            async with self.pool.stream(node, command) as lines:
                async for line in lines:
                    tail.push(line)

    def _scrape(self, heads: dict[tuple[str, str], str]) -> None:
        for key in list(self._scrapes):
            if key not in heads:
                self._scrapes.pop(key).cancel()
        if heads and self._http is None:
            import httpx  # here: a fleet with no lane running never pays for it

            self._http = httpx.AsyncClient(timeout=SCRAPE_TIMEOUT_S)
        for key in heads:
            if key not in self._scrapes or self._scrapes[key].done():
                self._scrapes[key] = asyncio.create_task(self._scrape_loop(*key, self._http))

    async def _scrape_loop(self, lane: str, cluster: str, http: httpx.AsyncClient) -> None:
        import httpx

        from cockpit.ops.readiness import base_url  # imports httpx too

        try:
            plan = plan_lane(
                self.inventory, self.inventory.recipe(lane), self.inventory.cluster(cluster)
            )
            url = await base_url(self.pool, plan)
        except (CockpitError, SshError):
            # the next tick starts a new loop once this one is done: retry at the scrape pace
            await asyncio.sleep(self.scrape_s)
            return
        while True:
            with contextlib.suppress(httpx.HTTPError):
                response = await http.get(f"{url}/metrics")
                if response.status_code == 200:
                    metrics = parse_metrics(response.text, at=time.time())
                    self._engine.append(EngineSampled(lane, cluster, metrics))
            await asyncio.sleep(self.scrape_s)
