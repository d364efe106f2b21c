"""The fleet feed's pure parts (containers, node losses) and its log following, on a fake pool."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import cast

from cockpit.ssh import Link, NodeState, SshPool
from cockpit.status.probe import NodeFacts, Section
from cockpit.telemetry.gpu import GpuSample
from cockpit.tui.feeds.fleet import FleetFeed, exit_code, lane_containers, node_input
from cockpit.tui.state import NodeLost, RankLines, RankOnNode
from tests.tui import scene

LANE, CLUSTER = "qwen3-0.6b-2x", "2nodes-dac"


def ps_line(name: str, cid: str, rank: int, state: str, status: str) -> str:
    labels = f"cockpit.cluster={CLUSTER},cockpit.lane={LANE},cockpit.rank={rank}"
    row = {"ID": cid, "Names": name, "Image": "i", "State": state, "Status": status}
    return json.dumps({**row, "Labels": labels})


def test_exited_lane_containers_are_listed_with_their_exit_code() -> None:
    text = "\n".join(
        [
            ps_line("cockpit-qwen3-0.6b-2x-r0", "aaaaaaaaaaaa", 0, "running", "Up 2 minutes"),
            ps_line("cockpit-qwen3-0.6b-2x-r1", "bbbbbbbbbbbb", 1, "exited", "Exited (137) 3s ago"),
            json.dumps({"ID": "cccc", "Names": "other", "State": "exited", "Status": "Exited (0)"}),
        ]
    )
    facts = NodeFacts().with_frame(Section("ps", text, 0), 1.0)
    assert [c.names for c in facts.containers or ()] == ["cockpit-qwen3-0.6b-2x-r0"]
    assert [c.names for c in facts.exited] == ["cockpit-qwen3-0.6b-2x-r1"]  # not "other"
    assert [rank for _, rank in lane_containers(facts)] == [
        RankOnNode(LANE, CLUSTER, 0, True, None, "aaaaaaaaaaaa"),
        RankOnNode(LANE, CLUSTER, 1, False, 137, "bbbbbbbbbbbb"),
    ]
    assert exit_code("Exited (1) 2 hours ago") == 1 and exit_code("Up 3 seconds") is None


def test_a_loss_is_down_only_once_a_reconnect_failed() -> None:
    facts = NodeFacts(heard_at=1.0, gpus={0: GpuSample(index=0)}, probe_error="link lost")
    dropped = NodeState(Link.UNREACHABLE, "connection lost", 1.0, failures=0)
    refused = NodeState(Link.UNREACHABLE, "connection refused", 1.0, failures=2, retry_at=1.0)
    first = node_input("dgx3", facts, dropped, (), 2.0)
    later = node_input("dgx3", facts, refused, (), 3.0)
    assert isinstance(first, NodeLost) and not first.down  # a short gap: STALE
    assert isinstance(later, NodeLost) and later.down and later.error == "connection refused"


class FakePool:
    """`stream` yields the lines a test gives per (node, container name), then ends."""

    def __init__(self) -> None:
        self.lines: dict[tuple[str, str], list[str]] = {}
        self.opened: list[tuple[str, str]] = []

    def stream(self, node: str, command: list[str]) -> object:
        name = command[-1]
        self.opened.append((node, name))
        lines = self.lines.get((node, name), [])

        @asynccontextmanager
        async def opened() -> AsyncIterator[AsyncIterator[str]]:
            async def gen() -> AsyncIterator[str]:
                for line in lines:
                    yield line

            yield gen()

        return opened()


def ticked(feed: FleetFeed) -> list[RankLines]:
    """The log lines one tick of the feed hands out (no node lists anything)."""
    return [b for b in feed._tick(EmptyPoller()) if isinstance(b, RankLines)]  # type: ignore[arg-type]


async def test_a_container_is_followed_from_its_start_and_again_after_a_relaunch() -> None:
    pool = FakePool()
    feed = FleetFeed(scene.inventory(), cast(SshPool, pool))
    name = "cockpit-qwen3-0.6b-2x-r1"
    pool.lines[("dgx2", name)] = ["boot", "SafetensorError: bad header"]
    feed.follow("dgx2", name, RankOnNode(LANE, CLUSTER, 1, container="bbbbbbbbbbbb"))
    await asyncio.sleep(0.05)
    # the container was removed before any node listing showed it: its lines still go out
    (lines,) = ticked(feed)
    assert lines.lines == ("boot", "SafetensorError: bad header") and lines.fresh
    assert ticked(feed) == [] and ("dgx2", name) not in feed._logs  # let go after its last lines
    # relaunched under the same name: another container, another stream from its first line
    pool.lines[("dgx2", name)] = ["second boot"]
    feed.follow("dgx2", name, RankOnNode(LANE, CLUSTER, 1, container="cccccccccccc"))
    await asyncio.sleep(0.05)
    (lines,) = ticked(feed)
    assert lines.lines == ("second boot",) and lines.fresh
    assert pool.opened == [("dgx2", name), ("dgx2", name)]


class EmptyPoller:
    """A poller whose nodes list nothing yet."""

    def facts(self) -> dict[str, NodeFacts]:
        return {}

    def links(self) -> dict[str, NodeState]:
        return {}
