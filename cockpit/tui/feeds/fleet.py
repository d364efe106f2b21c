"""The live feed: the status poller's per-node facts, each lane container's log, each lane's
`/metrics`, folded into store inputs every 100 ms.

One long-lived probe channel per node (`cockpit.status.FleetPoller`), one `docker logs -f
--timestamps` channel per lane container (each line with the node's time of it, which the Log
pane shows on demand and saves), one HTTP scrape loop per running lane. A node that stops
answering only stops its own channels; its facts stay and the store marks them STALE / DOWN.

A container is followed from the moment its launch started it (`follow`, told by the screen
from the launch's events) or, failing that, when the node's container list shows it (every few
seconds): a rank that fails in its first seconds still has its lines on screen.

Until the first node sample is out the feed looks at the poller every 10 ms instead of every tick:
the first probe lines reach the screen as soon as they arrive. httpx (and its TLS context) is
loaded when the first lane is seen running, not at start.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
from collections import deque
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from cockpit.config import Inventory
from cockpit.errors import CockpitError
from cockpit.ops.op_records import OpOnNode, parse_records
from cockpit.ops.ownership import Alive, holder_check
from cockpit.pids import pid_exists
from cockpit.plan import plan_lane
from cockpit.ssh import Link, NodeState, SshError, SshPool
from cockpit.status.lock_view import LEASE_ONLY, node_lock
from cockpit.status.orphans import Orphans, OrphanWatch
from cockpit.status.poller import FleetPoller
from cockpit.status.probe import NodeFacts, Pace
from cockpit.telemetry.docker_out import (
    exit_code,
    follow_logs_command,
    image_with_digest,
    lane_of,
)
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


def lane_containers(
    facts: NodeFacts, orphans: Orphans | None = None
) -> list[tuple[str, RankOnNode]]:
    """The node's lane containers, (name, rank), from their `cockpit.*` labels: the running
    ones, then the exited ones with their exit code. With `orphans` (confirmed by
    `cockpit.status.orphans.OrphanWatch`), a running one is told orphaned or not."""
    out = []
    for row in (*(facts.containers or ()), *facts.exited):
        label = lane_of(row.labels)
        if label is not None and label.rank is not None and label.cluster:
            running = row.state in (None, "running")
            code = None if running else exit_code(row.status)
            rank = RankOnNode(
                label.lane, label.cluster, label.rank, running, code, row.id[:12],
                started=row.state != "created",
            )  # fmt: skip
            if running and orphans is not None:
                rank = replace(rank, orphaned=orphans.get(row.id))
            out.append((row.names, rank))
    return out


def others_on(node: str, facts: NodeFacts) -> tuple[OpOnNode, ...]:
    """The operations in flight `node` records, but this process's own (the Operations pane
    shows those from their events)."""
    mine = (socket.gethostname(), os.getpid())
    records = parse_records(node, facts.ops or "")
    return tuple(r for r in records if (r.record.host, r.record.pid) != mine)


def local_holder_check() -> Alive:
    """Whether a lock's holder is gone, as this host can tell (its own pids, every lease)."""
    return holder_check(socket.gethostname(), pid_exists)


def node_input(
    node: str,
    facts: NodeFacts,
    link: NodeState,
    refs: Sequence[str],
    now: float,
    orphans: Orphans | None = None,
    gone: Alive = LEASE_ONLY,
) -> StoreInput | None:
    """The store's view of one node's facts: a sample, a loss, or nothing yet. A loss is DOWN
    once the link is unreachable and a reconnect failed (a dropped connection that comes back at
    once is a short gap: STALE). `orphans`: as `lane_containers` tells them (without, none is
    told); `gone` judges the node's lock."""
    if facts.probe_error or link.link is Link.UNREACHABLE:
        retry = max(link.retry_at - time.monotonic(), 0.0) if link.retry_at else None
        down = link.link is Link.UNREACHABLE and link.failures > 0
        why = (link.error if link.link is Link.UNREACHABLE else None) or facts.probe_error
        return NodeLost(node, now, why or "unreachable", retry, down)
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
        tuple(rank for _, rank in lane_containers(facts, orphans)),
        images,
        ranks_known=facts.containers is not None,
        host=facts.host_load(),
        lock=node_lock(node, facts, now, gone),
        ops=others_on(node, facts),
    )


class LineTail:
    """The newest lines of one stream since the last `take`, and how many older ones were shed;
    `fresh` until the stream's first lines were taken."""

    def __init__(self, rank: RankOnNode, size: int = LOG_BUFFER) -> None:
        self.rank = rank
        self.lines: deque[str] = deque(maxlen=size)
        self.received = 0
        self.fresh = True

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
        self._orphans = OrphanWatch()
        self._logs: dict[tuple[str, str], asyncio.Task[None]] = {}  # (node, container name)
        self._tails: dict[tuple[str, str], LineTail] = {}
        self._scrapes: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._engine: list[StoreInput] = []
        self._sampled = False  # a NodeSampled went out
        self._http: httpx.AsyncClient | None = None
        self._running: FleetPoller | None = poller  # the poller `batches()` runs

    async def batches(self) -> AsyncIterator[Sequence[StoreInput]]:
        async with AsyncExitStack() as stack:
            poller = self.poller or await stack.enter_async_context(
                FleetPoller(self.pool, list(self.inventory.nodes), self.pace)
            )
            self._running = poller
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
                self._tails.clear()
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
        gone = local_holder_check()
        for node in facts:
            seen = (facts[node], links[node])
            if self._seen.get(node) != seen:
                self._seen[node] = seen
                ask = partial(poller.refresh, node)
                orphans = self._orphans.orphans(node, facts[node], gone, ask)
                item = node_input(node, facts[node], links[node], self._refs, now, orphans, gone)
                if item is not None:
                    batch.append(item)
            for name, rank in lane_containers(facts[node]):
                containers[(node, name)] = rank
                if rank.rank == 0 and rank.running:
                    heads[(rank.lane, rank.cluster)] = node
        self._follow_logs(containers)
        self._scrape(heads)
        for (node, _), tail in self._tails.items():
            if tail.received:
                lines, dropped = tail.take()
                rank, fresh, tail.fresh = tail.rank, tail.fresh, False
                batch.append(
                    RankLines(node, rank.lane, rank.cluster, rank.rank, lines, now, dropped, fresh)
                )
        batch += self._engine
        self._engine = []
        return batch

    def refresh(self, node: str) -> None:
        """An operation changed what runs on `node`: its probe looks again now."""
        if self._running is not None:
            self._running.refresh(node)

    def follow(self, node: str, name: str, rank: RankOnNode) -> None:
        """Follow a container's log now (a launch just started it), before the node's container
        list shows it; a container already followed under that name and id is left alone."""
        key = (node, name)
        tail = self._tails.get(key)
        task = self._logs.get(key)
        if tail is not None and task is not None and not task.done():
            if not rank.container or tail.rank.container == rank.container:
                return
            task.cancel()  # another container under the same name: its predecessor's stream
        self._start(key, rank)

    def _start(self, key: tuple[str, str], rank: RankOnNode) -> None:
        tail = self._tails[key] = LineTail(rank)
        self._logs[key] = asyncio.create_task(self._log(key, tail))

    def _follow_logs(self, containers: dict[tuple[str, str], RankOnNode]) -> None:
        """A stream per listed container; a new container under a followed name (a relaunch)
        gets a new stream, an exited one keeps what it printed until it is removed."""
        for key in list(self._logs):
            gone = key not in containers and self._logs[key].done()
            if gone and not self._tails[key].received:  # its last lines went out first
                del self._logs[key]
                del self._tails[key]
        for key, rank in containers.items():
            tail = self._tails.get(key)
            if tail is None:
                self._start(key, rank)
            elif tail.rank.container != rank.container:
                if tail.rank.container and self._logs[key].done():
                    self._start(key, rank)
                elif not tail.rank.container:  # followed from its launch: now we know its id
                    tail.rank = rank
            elif tail.rank != rank:
                tail.rank = rank  # it exited: same stream

    async def _log(self, key: tuple[str, str], tail: LineTail) -> None:
        node, name = key
        command = follow_logs_command(name, tail=LOG_TAIL, timestamps=True)
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
