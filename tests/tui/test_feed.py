"""The fleet feed's pure parts (containers, node losses) and its log following, on a fake pool."""

from __future__ import annotations

import asyncio
import json
import shlex
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import cast

from cockpit.ssh import Link, NodeState, SshPool
from cockpit.status.probe import NodeFacts, Section
from cockpit.telemetry.docker_out import exit_code
from cockpit.telemetry.gpu import GpuSample
from cockpit.tui.feeds.fleet import FleetFeed, lane_containers, node_input
from cockpit.tui.state import NodeLost, NodeSampled, RankLines, RankOnNode
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


def test_a_container_created_but_never_started_is_told_apart_from_an_exited_one() -> None:
    """A `docker run` killed between create and start leaves a container in state `created`:
    it never ran, so it has no exit to report."""
    text = ps_line("cockpit-qwen3-0.6b-2x-r0", "aaaaaaaaaaaa", 0, "created", "Created")
    facts = NodeFacts().with_frame(Section("ps", text, 0), 1.0)
    [(_, rank)] = lane_containers(facts)
    assert not rank.running and not rank.started and rank.exit_code is None


def test_a_loss_is_down_only_once_a_reconnect_failed() -> None:
    facts = NodeFacts(heard_at=1.0, gpus={0: GpuSample(index=0)}, probe_error="link lost")
    dropped = NodeState(Link.UNREACHABLE, "connection lost", 1.0, failures=0)
    refused = NodeState(Link.UNREACHABLE, "connection refused", 1.0, failures=2, retry_at=1.0)
    first = node_input("dgx3", facts, dropped, (), 2.0)
    later = node_input("dgx3", facts, refused, (), 3.0)
    assert isinstance(first, NodeLost) and not first.down  # a short gap: STALE
    assert isinstance(later, NodeLost) and later.down and later.error == "connection refused"


def test_a_node_heard_before_its_container_list_came_has_its_ranks_unknown() -> None:
    """The probe sends a node's GPU and memory before its `docker ps`: until that comes, the
    node's lanes are unknown, not none (the head of a serving lane read '–')."""
    link = NodeState(Link.CONNECTED)
    facts = NodeFacts(heard_at=1.0, gpus={0: GpuSample(index=0)}, gpu_at=1.0)
    first = node_input("dgx1", facts, link, (), 1.0)
    assert isinstance(first, NodeSampled) and not first.ranks_known and first.ranks == ()
    running = ps_line("cockpit-qwen3-0.6b-2x-r0", "aaaaaaaaaaaa", 0, "running", "Up 2 minutes")
    listed = node_input("dgx1", facts.with_frame(Section("ps", running, 0), 2.0), link, (), 2.0)
    assert isinstance(listed, NodeSampled) and listed.ranks_known and len(listed.ranks) == 1
    empty = node_input("dgx1", facts.with_frame(Section("ps", "", 0), 2.0), link, (), 2.0)
    assert isinstance(empty, NodeSampled) and empty.ranks_known and empty.ranks == ()


def test_running_ranks_are_told_orphaned_as_the_confirmed_verdicts_say() -> None:
    """Orphans are judged and confirmed elsewhere (`cockpit.status.orphans`); the feed marks the
    running ranks they name, never an exited one (a failed rank, not an orphan)."""
    running = ps_line("cockpit-qwen3-0.6b-2x-r0", "aaaaaaaaaaaa", 0, "running", "Up 2 minutes")
    exited = ps_line("cockpit-qwen3-0.6b-2x-r1", "bbbbbbbbbbbb", 1, "exited", "Exited (1) 1s ago")
    listed = NodeFacts().with_frame(Section("ps", f"{running}\n{exited}", 0), 2.0)
    orphans = {"aaaaaaaaaaaa": "no lock", "bbbbbbbbbbbb": "no lock"}
    assert [r.orphaned for _, r in lane_containers(listed, orphans)] == ["no lock", None]
    assert [r.orphaned for _, r in lane_containers(listed)] == [None, None]


class FakePool:
    """`stream` yields the lines a test gives per (node, container name), then ends."""

    def __init__(self) -> None:
        self.lines: dict[tuple[str, str], list[str]] = {}
        self.opened: list[tuple[str, str]] = []

    def stream(self, node: str, command: str) -> object:
        *argv, merge = shlex.split(command)
        assert merge == "2>&1", "the container's stderr (tracebacks) is followed too"
        assert "--timestamps" in argv, "each line with its time (the Log pane's `T`, save)"
        name = argv[-1]
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
