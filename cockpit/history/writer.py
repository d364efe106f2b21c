"""The one thread that writes the store, behind a bounded queue: callers never wait on the disk.

`put` never blocks: when the queue is full (the disk stalled for minutes) or the store cannot be
opened, the row is dropped and counted, and `problem` says why. Rows are written in
batches, one transaction each; retention pruning runs in the same thread at start and hourly.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path

from cockpit.errors import CockpitError
from cockpit.history.records import ReportWritten, Row
from cockpit.history.store import HistoryStore

QUEUE_MAX = 10_000
BATCH_MAX = 500
PRUNE_EVERY_S = 3600.0
DAY_S = 86400.0
_CLOSE = object()


class Writer:
    """Owns the writing connection; `close` writes what is queued, then ends the thread."""

    def __init__(
        self,
        path: Path,
        retention_days: float | None,
        clock: Callable[[], float] = time.time,
        queue_max: int = QUEUE_MAX,
    ) -> None:
        self.path = path
        self.retention_days = retention_days
        self.clock = clock
        self.queue: queue.Queue[object] = queue.Queue(queue_max)
        self.problem: str | None = None  # the last reason rows were lost, for a notice
        self.usable = True  # False once the store could not be opened: rows are dropped at once
        self.dropped = 0
        self.written = 0
        self._thread = threading.Thread(target=self._run, name="history-writer", daemon=True)
        self._thread.start()

    def put(self, row: Row) -> bool:
        """Queue a row; False when it was dropped (queue full, or the store is unusable)."""
        if self.usable:
            try:
                self.queue.put_nowait(row)
                return True
            except queue.Full:
                self.problem = f"history writer behind by {self.queue.maxsize} rows: dropping"
        self.dropped += 1
        return False

    def close(self, timeout_s: float = 10.0) -> None:
        """Write what is queued and end the thread (waits at most `timeout_s`)."""
        with contextlib.suppress(queue.Full):
            self.queue.put(_CLOSE, timeout=timeout_s)
        self._thread.join(timeout_s)

    def _run(self) -> None:
        try:
            store = HistoryStore.open(self.path)
        except CockpitError as exc:
            self.problem, self.usable = str(exc), False
            self._drain()
            return
        next_prune = self.clock()
        try:
            while True:
                if self.retention_days is not None and self.clock() >= next_prune:
                    self._prune(store)
                    next_prune = self.clock() + PRUNE_EVERY_S
                try:
                    first = self.queue.get(timeout=PRUNE_EVERY_S)
                except queue.Empty:
                    continue
                batch = [first]
                while batch[-1] is not _CLOSE and len(batch) < BATCH_MAX:
                    try:
                        batch.append(self.queue.get_nowait())
                    except queue.Empty:
                        break
                rows: list[object] = []
                try:
                    found = [self._indexed(row) for row in batch if row is not _CLOSE]
                    rows = [row for row in found if row is not None]
                    if rows:
                        store.write(rows)  # type: ignore[arg-type]
                        self.written += len(rows)
                except Exception as exc:  # the disk is full, …: these rows are lost, not the next
                    self.problem = f"history store {self.path}: {exc}"
                    self.dropped += len(rows)
                if batch[-1] is _CLOSE:
                    return
        finally:
            store.close()

    def _indexed(self, row: object) -> object:
        """A written report becomes its index row (read here: a report is tens of kB of JSON)."""
        if not isinstance(row, ReportWritten):
            return row
        from cockpit.bench.artifacts import load_report
        from cockpit.history.benches import bench_row

        try:
            return bench_row(load_report(Path(row.path)), Path(row.path))
        except (CockpitError, OSError, ValueError) as exc:
            self.problem = f"bench report {row.path} not indexed: {exc}"
            return None

    def _prune(self, store: HistoryStore) -> None:
        assert self.retention_days is not None
        try:
            store.prune(self.clock() - self.retention_days * DAY_S)
        except Exception as exc:  # the next prune tries again
            self.problem = f"history store {self.path}: pruning: {exc}"

    def _drain(self) -> None:
        """The store is unusable: take (and drop) rows until closed, so nobody waits on them."""
        while True:
            item = self.queue.get()
            if item is _CLOSE:
                return
            self.dropped += 1
