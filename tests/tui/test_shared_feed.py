"""The shared feed of `cockpit serve`'s viewers, in process: the store inputs cross its socket
whole (and nothing but the cockpit's classes is unpickled), a late viewer's replay leaves standing
what the batches so far left standing, and one source serves every viewer while any watches."""

from __future__ import annotations

import asyncio
import os
import pickle
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from cockpit.tui.feeds import Feed, shared
from cockpit.tui.feeds.shared import HEADER, FeedHub, Replay, SharedFeed, frame, unframe
from cockpit.tui.state.inputs import NodeLost, NodeSampled, RankLines, RankOnNode, StoreInput
from tests.tui import scene


def test_every_input_of_the_recorded_scene_crosses_the_socket_whole() -> None:
    inputs = scene.scene(scene.inventory())
    data = frame(inputs)
    assert int.from_bytes(data[:HEADER], "big") == len(data) - HEADER
    assert unframe(data[HEADER:]) == tuple(inputs)


def test_a_frame_naming_any_other_class_is_refused() -> None:
    class Shell:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.system, ("true",))

    with pytest.raises(pickle.UnpicklingError, match=r"posix\.system is not a store input"):
        unframe(pickle.dumps((Shell(),)))


def _sampled(node: str, *ranks: RankOnNode, at: float = 1.0) -> NodeSampled:
    return NodeSampled(node, at, None, None, ranks)


def _lines(node: str, rank: int, *lines: str, fresh: bool = False) -> RankLines:
    return RankLines(node, "lane", "c", rank, lines, at=float(len(lines)), fresh=fresh)


def test_the_replay_keeps_what_the_batches_left_standing() -> None:
    replay = Replay(log_lines=3)
    r0, r1 = RankOnNode("lane", "c", 0), RankOnNode("lane", "c", 1)
    lost = NodeLost("dgx2", 2.0, "timeout")
    replay.record([_sampled("dgx1", r0), _sampled("dgx2", r1), lost])
    replay.record([_lines("dgx1", 0, "a", "b"), _lines("dgx1", 0, "c", "d")])
    replay.record([_lines("dgx2", 1, "x"), _lines("dgx2", 1, "y", fresh=True)])
    assert replay.batch() == [
        _sampled("dgx1", r0),
        _sampled("dgx2", r1),
        lost,  # the last sample stays, marked lost
        RankLines("dgx1", "lane", "c", 0, ("b", "c", "d"), 2.0, fresh=True),  # the newest 3
        RankLines("dgx2", "lane", "c", 1, ("y",), 1.0, fresh=True),  # its stream started over
    ]
    replay.record([_sampled("dgx1", at=3.0)])  # the container is gone: its log with it
    assert replay.batch() == [
        _sampled("dgx1", at=3.0),
        _sampled("dgx2", r1),
        lost,
        RankLines("dgx2", "lane", "c", 1, ("y",), 1.0, fresh=True),
    ]


class ScriptedSource:
    """A feed source the test feeds batch by batch; counts how often it was opened and closed."""

    def __init__(self) -> None:
        self.script: asyncio.Queue[list[StoreInput]] = asyncio.Queue()
        self.opened = 0
        self.closed = 0

    @asynccontextmanager
    async def __call__(self) -> AsyncIterator[Feed]:
        self.opened += 1
        try:
            yield self
        finally:
            self.closed += 1

    name = "scripted"

    async def batches(self) -> AsyncIterator[Sequence[StoreInput]]:
        while True:
            yield await self.script.get()


async def _next(batches: AsyncIterator[Sequence[StoreInput]]) -> list[StoreInput]:
    return list(await asyncio.wait_for(anext(batches), 5))


async def _until(condition: Callable[[], bool], what: str) -> None:
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.01)
    pytest.fail(what)


async def test_one_source_serves_every_viewer_and_stops_after_the_last(tmp_path: Path) -> None:
    source = ScriptedSource()
    first, second = _sampled("dgx1", at=1.0), _sampled("dgx1", at=2.0)
    async with FeedHub(source, tmp_path / "feed.sock", linger_s=0.2) as hub:
        assert source.opened == 0  # nobody watches yet
        early = SharedFeed(hub.path).batches()
        attaching = asyncio.create_task(_next(early))
        await _until(lambda: source.opened == 1, "the first viewer did not start the source")
        source.script.put_nowait([first])
        assert await attaching == [first]

        late = SharedFeed(hub.path).batches()
        assert await _next(late) == [first]  # the replay
        source.script.put_nowait([second])
        assert await _next(early) == [second]
        assert await _next(late) == [second]
        assert (source.opened, hub.viewers) == (1, 2)

        await early.aclose()
        await late.aclose()
        await _until(lambda: source.closed == 1, "the source outlived its viewers")
        assert hub.replay.batch() == []  # the next viewer waits for fresh facts

        again = SharedFeed(hub.path).batches()
        resumed = asyncio.create_task(_next(again))
        await _until(lambda: source.opened == 2, "a new viewer did not start the source again")
        source.script.put_nowait([second])
        assert await resumed == [second]
        await again.aclose()
    assert not (tmp_path / "feed.sock").exists()


async def test_a_viewer_that_falls_behind_is_dropped_and_starts_again_from_a_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shared, "QUEUE_BATCHES", 2)
    source = ScriptedSource()
    flood = [_lines("dgx1", 0, "x" * 200_000)]  # a socket's buffers fill within a few of these
    async with FeedHub(source, tmp_path / "feed.sock") as hub:
        _, stalled = await asyncio.open_unix_connection(str(hub.path))  # it never reads
        await _until(lambda: source.opened == 1, "the viewer did not start the source")
        for _ in range(40):
            source.script.put_nowait(flood)
        await _until(lambda: hub.viewers == 0, "a viewer that reads nothing was kept")
        stalled.close()

        again = SharedFeed(hub.path).batches()
        [replay] = await _next(again)
        assert isinstance(replay, RankLines) and replay.fresh and len(replay.lines) == 40
        await again.aclose()
