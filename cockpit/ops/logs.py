"""`cockpit logs`: a lane's container logs, its ranks' lines interleaved by the nodes' clocks.

Which containers (pure, `pick`): the lane's ranks the nodes list (exited ones too: their log is
kept until a stop removes them), on one cluster; the head by default, one rank, or all. Reading
(`read`): one `docker logs --timestamps` per rank over the pool, stdout and stderr merged
(`follow_logs_command`), and the lines put in time order by `Interleave`: a rank's lines are in
order already, so a line goes out once every other rank still reading has a line waiting, or,
while following, FOLLOW_HOLD_S after it came (a quiet worker must not hold up its head's lines).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import math
import re
import time
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, NamedTuple, TypeVar

from cockpit.errors import CockpitError, InputError
from cockpit.ops.ranks import docker_time
from cockpit.ssh import SshError, SshPool
from cockpit.telemetry.docker_out import (
    ContainerRow,
    follow_logs_command,
    lane_of,
    split_time,
)

FOLLOW_HOLD_S = 0.5
"""While following, how long a line waits for a silent rank's earlier lines."""
QUEUE_LINES = 1000  # lines read ahead of the printer: a slow terminal slows the reads

_DURATION = re.compile(r"(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+")
_MOMENT = re.compile(
    r"\d+(?:\.\d+)?|\d{4}-\d\d-\d\d(?:T\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:\d\d)?)?"
)


class RankLog(NamedTuple):
    """One rank's container: where it is and whether it still runs."""

    node: str
    rank: int
    container: str
    running: bool

    @property
    def tag(self) -> str:
        return f"{self.node}/r{self.rank}"


@dataclass(frozen=True)
class Picked:
    """The ranks to read, and the nodes that could not say whether they hold one."""

    ranks: tuple[RankLog, ...]
    unreachable: Mapping[str, str]  # node → why


def check_since(text: str) -> str:
    """Docker's `--since`: a duration (`10m`, `1h30m`), an RFC 3339 time or a unix time."""
    if _DURATION.fullmatch(text) or _MOMENT.fullmatch(text):
        return text
    raise InputError(
        f"--since {text!r}: give a duration such as 10m, 1h30m or 45s, or a time such as "
        "2026-10-02T19:06:00Z"
    )


def pick(
    lane: str,
    containers: Mapping[str, Sequence[ContainerRow]],
    unreachable: Mapping[str, str],
    *,
    cluster: str | None = None,
    rank: int | None = None,
    every: bool = False,
) -> Picked:
    """The lane's ranks to read among the nodes' container lists: its head, `rank`, or `every`
    one. A rank that is not there is bad input (exit 2), unless a node that did not answer may
    hold it (exit 1: the nodes failed)."""
    found: dict[str, dict[int, RankLog]] = {}
    for node, rows in containers.items():
        for row in rows:
            label = lane_of(row.labels)
            if label is None or label.lane != lane or label.rank is None or not label.cluster:
                continue
            if cluster is not None and label.cluster != cluster:
                continue
            running = row.state in (None, "running")
            found.setdefault(label.cluster, {})[label.rank] = RankLog(
                node, label.rank, row.names, running
            )
    down = "; ".join(f"{node} unreachable ({why})" for node, why in sorted(unreachable.items()))
    if len(found) > 1:
        raise InputError(
            f"{lane} has containers on {' and '.join(sorted(found))}: choose one with --cluster"
        )
    if not found:
        where = f" on {cluster}" if cluster else ""
        if unreachable:
            raise CockpitError(f"no container of {lane} found{where}: {down}")
        raise InputError(f"{lane} runs nowhere{where}: no container of it, running or exited")
    ((on, ranks),) = found.items()
    if every:
        return Picked(tuple(ranks[r] for r in sorted(ranks)), unreachable)
    wanted = 0 if rank is None else rank
    if wanted in ranks:
        return Picked((ranks[wanted],), {})
    listed = ", ".join(f"{r} on {ranks[r].node}" for r in sorted(ranks))
    what = "its head (rank 0)" if rank is None else f"rank {wanted}"
    if unreachable:
        raise CockpitError(f"{what} of {lane} on {on} not found: {down}")
    raise InputError(f"{lane} on {on} has no container for {what} (ranks: {listed})")


K = TypeVar("K")
P = TypeVar("P")


class Interleave(Generic[K, P]):
    """Lines of several streams in the order of their times (`at`, seconds; None: the time of
    the stream's line before). Each stream is in order already; a line is released once every
    other open stream has a line waiting, or `hold_s` after it arrived."""

    def __init__(self, keys: Iterable[K], hold_s: float) -> None:
        self.hold_s = hold_s
        self._open = set(keys)
        self._waiting: dict[K, int] = dict.fromkeys(self._open, 0)
        self._last: dict[K, float] = {}
        self._heap: list[tuple[float, int, float, K, P]] = []
        self._seq = 0

    def push(self, key: K, at: float | None, payload: P, now: float) -> None:
        last = self._last.get(key, -math.inf)
        at = last if at is None else max(at, last)  # a stream never runs backwards
        self._last[key] = at
        self._seq += 1
        heapq.heappush(self._heap, (at, self._seq, now, key, payload))
        self._waiting[key] = self._waiting.get(key, 0) + 1

    def close(self, key: K) -> None:
        """The stream ended: nothing of it is waited for any more."""
        self._open.discard(key)

    def ready(self, now: float) -> list[tuple[K, P]]:
        out: list[tuple[K, P]] = []
        while self._heap:
            _, _, arrived, key, payload = self._heap[0]
            silent = any(not self._waiting[k] for k in self._open if k != key)
            if silent and now - arrived < self.hold_s:
                break
            heapq.heappop(self._heap)
            self._waiting[key] -= 1
            out.append((key, payload))
        return out

    def wait_s(self, now: float) -> float | None:
        """How long until the first held line is released by time (None: not by time)."""
        if not self._heap or math.isinf(self.hold_s):
            return None
        return max(self._heap[0][2] + self.hold_s - now, 0.0)

    @property
    def done(self) -> bool:
        return not self._open and not self._heap


class Line(NamedTuple):
    rank: RankLog
    ts: str  # docker's time of the line
    text: str


class Failed(NamedTuple):
    """A rank's read failed: the link, or docker's own message (`No such container: …`)."""

    rank: RankLog
    why: str


_END = object()


async def _stream(
    pool: SshPool, rank: RankLog, command: str, queue: asyncio.Queue[tuple[RankLog, object]]
) -> None:
    """One rank's lines into `queue`, a `Failed` if the link failed, then the end."""
    try:
        async with pool.stream(rank.node, command) as lines:
            async for line in lines:
                await queue.put((rank, line))
    except SshError as exc:
        await queue.put((rank, Failed(rank, exc.reason)))
    await queue.put((rank, _END))


async def read(
    pool: SshPool,
    ranks: Sequence[RankLog],
    *,
    follow: bool,
    since: str | None = None,
) -> AsyncIterator[Line | Failed]:
    """The ranks' log lines in time order until every read ended (with `follow`: until their
    containers stop, or the caller closes the iteration, which stops the reads on the nodes).
    Read once, the lines are sorted whatever the nodes' pace; followed, a line waits at most
    FOLLOW_HOLD_S for a silent rank."""
    hold = FOLLOW_HOLD_S if follow else math.inf
    merge: Interleave[RankLog, tuple[str, str]] = Interleave(ranks, hold)
    queue: asyncio.Queue[tuple[RankLog, object]] = asyncio.Queue(QUEUE_LINES)
    tasks = [
        asyncio.create_task(
            _stream(
                pool,
                rank,
                follow_logs_command(rank.container, follow=follow, since=since, timestamps=True),
                queue,
            )
        )
        for rank in ranks
    ]
    try:
        while not merge.done:
            try:
                async with asyncio.timeout(merge.wait_s(time.monotonic())):
                    rank, item = await queue.get()
            except TimeoutError:
                pass  # a held line's time is up
            else:
                if item is _END:
                    merge.close(rank)
                elif isinstance(item, Failed):
                    yield item
                elif isinstance(item, str):
                    ts, text = split_time(item)
                    if not ts:  # every line of the container is stamped: this is docker's own
                        yield Failed(rank, text)
                        continue
                    merge.push(rank, docker_time(ts), (ts, text), time.monotonic())
            for rank, (ts, text) in merge.ready(time.monotonic()):
                yield Line(rank, ts, text)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
