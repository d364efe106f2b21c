"""The one-shot status's first round (issue 19: at 64 simulated nodes a fixed deadline returned
every node `ok` with 126 of 128 image cells unknown). A scripted pool plays the probe's frames."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from cockpit.ssh import Link, NodeState, NodeUnreachable
from cockpit.status import FleetPoller, fleet_status

NODES = [f"dgx{i}" for i in range(1, 65)]


class Lines:
    """One node's probe stream: the fast facts at once, the image inventory after `img_s`."""

    def __init__(self, img_s: float | None) -> None:
        self.img_s = img_s
        self.stderr_tail: list[str] = []
        self.exit_status: int | None = None

    async def __aenter__(self) -> Lines:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def _lines(self) -> AsyncIterator[str]:
        for line in ("gpu.\t0", "mem\tMemTotal: 1 kB", "mem.\t0", "ps.\t0", "own.\t0"):
            yield line
        if self.img_s is not None:
            await asyncio.sleep(self.img_s)
            yield "img.\t0"
        while True:  # the probe keeps its GPU samples coming: not progress for the first round
            await asyncio.sleep(0.05)
            yield "gpu.\t0"

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()


class ScriptedPool:
    def __init__(self, img_after: dict[str, float | None]) -> None:
        self.img_after = img_after

    def stream(self, node: str, script: str) -> Lines:
        return Lines(self.img_after[node])

    def state(self, node: str) -> NodeState:
        return NodeState(link=Link.CONNECTED)


async def _first_round(img_after: dict[str, float | None], idle_s: float, cap_s: float):
    poller = FleetPoller(ScriptedPool(img_after), NODES)  # type: ignore[arg-type]
    async with poller:
        started = time.monotonic()
        complete = await poller.wait_first_round(idle_s, cap_s)
        took = time.monotonic() - started
        return complete, took, fleet_status(poller.links(), poller.facts(), [], time.time())


async def test_the_round_waits_while_facts_keep_arriving() -> None:
    # one node's inventory every 40 ms: 2.6 s in all, far beyond the 0.5 s without progress
    img_after = {node: 0.04 * i for i, node in enumerate(NODES, 1)}
    complete, took, status = await _first_round(img_after, idle_s=0.5, cap_s=20)
    assert complete and status.complete and status.unknown == {}
    assert 2.5 < took < 10


async def test_what_never_arrives_is_unknown_once_nothing_moves() -> None:
    img_after: dict[str, float | None] = {node: 0.01 for node in NODES}
    img_after["dgx7"] = img_after["dgx9"] = None  # their image inventory never comes
    complete, took, status = await _first_round(img_after, idle_s=0.5, cap_s=20)
    assert not complete and not status.complete
    assert status.unknown == {"dgx7": ("img",), "dgx9": ("img",)}
    assert took < 3  # the GPU samples that keep coming do not hold the round open


async def test_a_hard_cap_ends_a_round_that_keeps_moving() -> None:
    img_after = {node: 0.1 * i for i, node in enumerate(NODES, 1)}  # 6.4 s of steady progress
    complete, took, status = await _first_round(img_after, idle_s=0.5, cap_s=1.5)
    assert not complete and 1.4 < took < 3 and len(status.unknown) > 40


class ReturningPool:
    """One node whose link is down (its probe fails at once, its backoff long) until `back()`:
    then another user of the pool (an operation) has reconnected it."""

    def __init__(self) -> None:
        self.link = NodeState(Link.UNREACHABLE, "connection refused", 0.0, 5, time.monotonic() + 60)
        self.opened = 0

    def back(self) -> None:
        self.link = NodeState(Link.CONNECTED)

    def stream(self, node: str, script: str) -> Lines:
        self.opened += 1
        if self.link.link is not Link.CONNECTED:
            raise NodeUnreachable(node, "connection refused (next attempt in 60 s)")
        return Lines(None)

    def state(self, node: str) -> NodeState:
        return self.link


async def test_a_node_reconnected_by_an_operation_is_probed_again_at_once() -> None:
    """After an outage the probe waits out the link's backoff (up to 30 s); a node that an
    operation reconnected meanwhile is probed again at once, not DOWN until then."""
    pool = ReturningPool()
    poller = FleetPoller(pool, ["dgx1"])  # type: ignore[arg-type]
    async with poller:
        await asyncio.sleep(0.2)
        assert pool.opened == 1 and poller.facts()["dgx1"].probe_error
        pool.back()
        await asyncio.sleep(1.0)
        assert pool.opened == 2
        assert poller.facts()["dgx1"].meminfo_at is not None
