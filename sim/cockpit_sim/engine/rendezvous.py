"""Head ↔ worker link over TCP on `--master-addr:--master-port` (JSON lines), like torch's store.

Workers connect (retrying while the head is not up yet: workers start first), say their rank and
wait for "go" (all ranks joined: NCCL init may start). Collective steps are barriers, as on a
real lane: a worker reports reaching a checkpoint (`report`), the head waits until every worker
has (`wait_all`) and, for the NCCL init, tells them all it passed (`{"type": "passed"}`), so no
rank's `Init COMPLETE` comes before every rank's init, and the head does not finish its engine
init (nor serve) before every worker has finished its own. The head also streams its GPU load so
every rank's nvidia-smi follows the engine, and each side notices the other vanishing when the
socket closes (a dead head takes its workers down, a dead worker its head, as in vLLM's
multiproc executor).
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from collections.abc import Callable
from typing import Any


class HeadLink:
    """The head's listening side: collects `expected` workers, then broadcasts messages."""

    def __init__(self, host: str, port: int, expected: int) -> None:
        self.host = host
        self.port = port
        self.expected = expected
        self._writers: dict[int, asyncio.StreamWriter] = {}
        self._reached: defaultdict[str, set[int]] = defaultdict(set)
        self._progress = asyncio.Event()
        self._joined = asyncio.Event()
        self.lost = asyncio.Event()
        self.lost_rank: int | None = None
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._on_worker, self.host, self.port)
        if self.expected == 0:
            self._joined.set()

    async def _on_worker(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            hello = json.loads(await reader.readline())
        except (ValueError, ConnectionError):
            writer.close()
            return
        rank = int(hello.get("rank", -1))
        self._writers[rank] = writer
        if len(self._writers) >= self.expected:
            self._joined.set()
        try:
            while line := await reader.readline():
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if message.get("type") == "at":
                    self._reached[str(message.get("checkpoint"))].add(rank)
                    self._progress.set()
        except ConnectionError:  # a reset: the worker died with the head's last messages unread
            pass
        if self._writers.pop(rank, None) is not None and self.lost_rank is None:
            self.lost_rank = rank
            self.lost.set()

    async def wait_joined(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(self._joined.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def wait_all(self, checkpoint: str) -> None:
        """Until every worker has reported `checkpoint` (a worker lost meanwhile: `lost`)."""
        while len(self._reached[checkpoint]) < self.expected:
            self._progress.clear()
            await self._progress.wait()

    @property
    def joined(self) -> int:
        return len(self._writers)

    def broadcast(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message) + "\n").encode()
        for writer in list(self._writers.values()):
            if not writer.is_closing():
                writer.write(data)

    async def close(self) -> None:
        for writer in self._writers.values():
            writer.close()
        if self._server is not None:
            self._server.close()


class WorkerLink:
    """A worker's connection to the head."""

    def __init__(self, host: str, port: int, rank: int) -> None:
        self.host = host
        self.port = port
        self.rank = rank
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def connect(self, timeout: float, retry_s: float = 0.2) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            try:
                self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
            except OSError:
                if loop.time() >= deadline:
                    return False
                await asyncio.sleep(retry_s)
                continue
            self._writer.write((json.dumps({"rank": self.rank}) + "\n").encode())
            return True

    def report(self, checkpoint: str) -> None:
        """Tell the head this rank reached `checkpoint`."""
        assert self._writer is not None
        if not self._writer.is_closing():
            message = {"type": "at", "checkpoint": checkpoint}
            self._writer.write((json.dumps(message) + "\n").encode())

    async def follow(self, on_message: Callable[[dict[str, Any]], None]) -> None:
        """Deliver the head's messages until its socket closes (returns then)."""
        assert self._reader is not None
        while line := await self._reader.readline():
            try:
                on_message(json.loads(line))
            except ValueError:
                continue

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
