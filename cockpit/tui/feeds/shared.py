"""One fleet feed for many viewers: `cockpit serve` runs the feed once, and every browser
session's read-only TUI reads it over a local socket, so the nodes see one set of SSH connections
whatever the number of viewers.

The serve process (`FeedHub`) runs the feed while a viewer is attached, and `LINGER_S` after the
last one left (a page reload does not reconnect to every node). A viewer (`SharedFeed`) first gets
what a feed of its own would have told it by now (`Replay`: each node's last sample and loss, each
lane's last scrapes, each rank's newest log lines), then every batch as it comes. A viewer that
falls `QUEUE_BATCHES` behind is dropped: its app reconnects (the feed's restart backoff) and
starts again from a replay.

Frames are a 4-byte length and pickled store inputs. The socket is in a folder only this user can
open (the serve process makes it 0700), and a viewer unpickles the cockpit's own classes only.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import pickle
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path

from cockpit.backoff import Backoff
from cockpit.tui.feeds import Feed
from cockpit.tui.state.inputs import EngineSampled, NodeLost, NodeSampled, RankLines, StoreInput

log = logging.getLogger(__name__)
LINGER_S = 30.0
QUEUE_BATCHES = 600  # a minute of 100 ms ticks
REPLAY_LOG_LINES = 500  # as many as a feed fetches when it first follows a container
REPLAY_SCRAPES = 2  # rates are told from two scrapes
HEADER = 4
RESTART = Backoff()
SAFE_BUILTINS = frozenset({"frozenset", "set", "complex"})

RankKey = tuple[str, str, str, int]  # node, lane, cluster, rank


class Replay:
    """What a viewer that attaches now must be told first: the facts the feed's batches so far
    leave standing, bounded (a node's log of a removed container is forgotten)."""

    def __init__(self, log_lines: int = REPLAY_LOG_LINES) -> None:
        self.log_lines = log_lines
        self._nodes: dict[str, list[NodeSampled | NodeLost]] = {}
        self._engine: dict[tuple[str, str], deque[EngineSampled]] = {}
        self._logs: dict[RankKey, tuple[deque[str], float]] = {}

    def record(self, batch: Sequence[StoreInput]) -> None:
        for item in batch:
            if isinstance(item, NodeSampled):
                self._nodes[item.node] = [item]
                if item.ranks_known:
                    kept = {(item.node, r.lane, r.cluster, r.rank) for r in item.ranks}
                    for key in [k for k in self._logs if k[0] == item.node and k not in kept]:
                        del self._logs[key]
            elif isinstance(item, NodeLost):  # the store keeps the last sample, marked lost
                sampled = [s for s in self._nodes.get(item.node, ()) if isinstance(s, NodeSampled)]
                self._nodes[item.node] = [*sampled, item]
            elif isinstance(item, EngineSampled):
                scrapes = self._engine.setdefault(
                    (item.lane, item.cluster), deque(maxlen=REPLAY_SCRAPES)
                )
                scrapes.append(item)
            elif isinstance(item, RankLines):
                key = (item.node, item.lane, item.cluster, item.rank)
                kept = self._logs.get(key)
                lines: deque[str] = (
                    kept[0] if kept is not None and not item.fresh else deque(maxlen=self.log_lines)
                )
                lines.extend(item.lines)
                self._logs[key] = (lines, item.at)

    def batch(self) -> list[StoreInput]:
        """The replay as one batch, in the order a feed tells them: nodes, logs, scrapes."""
        out: list[StoreInput] = [item for items in self._nodes.values() for item in items]
        for (node, lane, cluster, rank), (lines, at) in self._logs.items():
            out.append(RankLines(node, lane, cluster, rank, tuple(lines), at, fresh=True))
        out += [scrape for scrapes in self._engine.values() for scrape in scrapes]
        return out

    def clear(self) -> None:
        self._nodes.clear()
        self._engine.clear()
        self._logs.clear()


def frame(batch: Sequence[StoreInput]) -> bytes:
    payload = pickle.dumps(tuple(batch), protocol=pickle.HIGHEST_PROTOCOL)
    return len(payload).to_bytes(HEADER, "big") + payload


class _CockpitOnly(pickle.Unpickler):
    """Unpickles the store's inputs and nothing else a socket could name."""

    def find_class(self, module: str, name: str) -> object:
        if module.startswith("cockpit.") or (module == "builtins" and name in SAFE_BUILTINS):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not a store input")


def unframe(payload: bytes) -> tuple[StoreInput, ...]:
    return _CockpitOnly(io.BytesIO(payload)).load()


class _Viewer:
    """One attached viewer: the batches not yet written to it; None ends it."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue(QUEUE_BATCHES)

    def send(self, data: bytes) -> bool:
        """Queue `data`; False (and the viewer ended) when it is too far behind."""
        try:
            self.queue.put_nowait(data)
            return True
        except asyncio.QueueFull:
            self.end()
            return False

    def end(self) -> None:
        while not self.queue.empty():
            self.queue.get_nowait()
        self.queue.put_nowait(None)


class FeedHub:
    """Runs one feed from `source` (opened while viewers are attached) and serves its batches
    on the unix socket `path` (`async with hub:`)."""

    def __init__(
        self,
        source: Callable[[], AbstractAsyncContextManager[Feed]],
        path: Path,
        linger_s: float = LINGER_S,
    ) -> None:
        self.source = source
        self.path = path
        self.linger_s = linger_s
        self.replay = Replay()
        self._viewers: set[_Viewer] = set()
        self._feed: asyncio.Task[None] | None = None
        self._linger: asyncio.Task[None] | None = None
        self._server: asyncio.Server | None = None

    @property
    def viewers(self) -> int:
        return len(self._viewers)

    @property
    def running(self) -> bool:
        return self._feed is not None and not self._feed.done()

    async def __aenter__(self) -> FeedHub:
        self._server = await asyncio.start_unix_server(self._attach, path=str(self.path))
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._server is not None:
            self._server.close()
        if self._linger is not None:
            self._linger.cancel()
        for viewer in list(self._viewers):
            viewer.end()
        await self._stop_feed()
        if self._server is not None:
            await self._server.wait_closed()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    async def _attach(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        viewer = _Viewer()
        replay = self.replay.batch()
        if replay:
            viewer.send(frame(replay))
        self._viewers.add(viewer)  # with the replay, in one step: no batch falls in between
        self._wake()
        hangup = asyncio.create_task(reader.read())  # a viewer sends nothing: EOF, it left
        hangup.add_done_callback(lambda _: viewer.end())
        try:
            while (data := await viewer.queue.get()) is not None:
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            hangup.cancel()
            self._viewers.discard(viewer)
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
            if not self._viewers and self._server is not None and self._server.is_serving():
                self._linger = asyncio.create_task(self._stop_later())

    def _wake(self) -> None:
        if self._linger is not None:
            self._linger.cancel()
            self._linger = None
        if not self.running:
            self._feed = asyncio.create_task(self._run())

    async def _stop_later(self) -> None:
        await asyncio.sleep(self.linger_s)
        if not self._viewers:
            await self._stop_feed()

    async def _stop_feed(self) -> None:
        if self._feed is not None:
            self._feed.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._feed
            self._feed = None
        self.replay.clear()  # the next viewer waits for fresh facts, not old ones shown as new

    async def _run(self) -> None:
        """The feed, restarted with backoff when it fails (as the app restarts its own)."""
        failures = 0
        while True:
            try:
                async with self.source() as feed:
                    async for batch in feed.batches():
                        failures = 0
                        self._publish(batch)
                return
            except Exception as exc:  # an I/O error or a bug must not end every viewer's feed
                failures += 1
                pause = RESTART.delay(failures)
                log.warning(
                    "the fleet feed failed (%s: %s); retrying in %gs",
                    type(exc).__name__,
                    exc,
                    pause,
                )
            await asyncio.sleep(pause)

    def _publish(self, batch: Sequence[StoreInput]) -> None:
        self.replay.record(batch)
        data = frame(batch)
        for viewer in list(self._viewers):
            if not viewer.send(data):
                self._viewers.discard(viewer)


class SharedFeed:
    """A viewer's feed: the batches of the `FeedHub` at `path`. A hub that goes away is a failed
    feed (the app shows it and reconnects with backoff)."""

    name = "fleet"

    def __init__(self, path: Path) -> None:
        self.path = path

    async def batches(self) -> AsyncIterator[Sequence[StoreInput]]:
        reader, writer = await asyncio.open_unix_connection(str(self.path))
        try:
            while True:
                size = int.from_bytes(await reader.readexactly(HEADER), "big")
                yield unframe(await reader.readexactly(size))
        except asyncio.IncompleteReadError:
            raise ConnectionError("the web view's shared feed closed") from None
        finally:
            writer.close()
