"""This cockpit's operations in flight, recorded on the nodes they work on
(`cockpit.ops.op_records`), so that every other cockpit sees them.

The cockpit running an operation rewrites its record when the operation moves (at most every
`WRITE_EVERY_S`) and at least every lease renewal, and removes it when the operation ends. The
writer is an observer of the operation's events (the CLI's and the TUI's consumers call
`observe`), never in the operation's way: a node that does not answer only delays its record.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import os
import secrets
import socket
import time
from dataclasses import dataclass, field, replace

from cockpit.bench.events import PointFinished, PointStarted
from cockpit.config import Inventory
from cockpit.events import Finished, OpEvent, Progress, StepStarted
from cockpit.ops.locks import LEASE, Lease
from cockpit.ops.op_records import (
    POINTS_KEPT,
    BenchPoint,
    OpRecord,
    remove_command,
    write_command,
)
from cockpit.ssh import Link, SshError, SshPool

WRITE_EVERY_S = 1.0  # a record is rewritten at most this often (progress comes much faster)
WRITE_TIMEOUT_S = 15.0


def step_of(event: OpEvent) -> str | None:
    """What `event` says of the operation's progress (None: it says nothing new)."""
    if isinstance(event, PointStarted):
        return f"point {event.index}/{event.total} {event.point.label}"
    if isinstance(event, Progress):
        where = f" on {event.node}" if event.node else ""
        total = f"/{event.total:.0f}" if event.total else ""
        done = f" {event.done:.0f}{total}{event.unit}" if event.done or event.total else ""
        return f"{event.step}{where}{done}"
    if isinstance(event, StepStarted):
        return f"{event.step} on {event.node}" if event.node else event.step
    return None


@dataclass
class _Run:
    record: OpRecord
    written: set[str] = field(default_factory=set)  # nodes that hold its record
    dirty: bool = True
    ended: bool = False
    renewed_at: float = 0.0


class InFlight:
    """This cockpit's operations recorded on their nodes (one writer for all of them: the TUI
    runs several). `observe` every event of every operation; `aclose` at the end removes what
    is left (an operation cancelled without its Finished)."""

    def __init__(self, pool: SshPool, inventory: Inventory, lease: Lease = LEASE) -> None:
        self.pool = pool
        self.inventory = inventory
        self.lease = lease
        self._runs: dict[object, _Run] = {}
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def observe(self, event: OpEvent, run: object = 0) -> None:
        """One event of operation `run`: its record is (re)written soon, removed once it ended."""
        current = self._runs.get(run)
        if current is None or (current.ended and not isinstance(event, Finished)):
            current = self._runs[run] = _Run(self._new_record(event))
        nodes = self._nodes(event, current.record.nodes)
        step = step_of(event)
        record = current.record
        if nodes != record.nodes or (step is not None and step != record.step):
            current.record = replace(record, nodes=nodes, step=step or record.step)
            current.dirty = True
        if isinstance(event, PointFinished):  # the bench's tail, for whoever follows it
            spec, result = event.result.spec, event.result
            point = BenchPoint(spec.depth, spec.concurrency, result.tg, result.pp)
            points = (*current.record.points, point)[-POINTS_KEPT:]
            current.record = replace(current.record, points=points)
            current.dirty = True
        if isinstance(event, Finished) and event.op == record.op:
            current.ended = True
        self._changed.set()
        if self._task is None:
            self._task = asyncio.create_task(self._loop())

    def ended(self, run: object) -> None:
        """Operation `run` is over, whatever way (cancelled without its Finished too)."""
        current = self._runs.get(run)
        if current is not None and not current.ended:
            current.ended = True
            self._changed.set()

    async def aclose(self) -> None:
        """Stop writing; remove every record still on a node (bounded by `WRITE_TIMEOUT_S`)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        for current in self._runs.values():
            current.ended = True
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(WRITE_TIMEOUT_S):
                await self._flush()

    def _new_record(self, event: OpEvent) -> OpRecord:
        return OpRecord(
            id=secrets.token_hex(6),
            user=getpass.getuser(),
            host=socket.gethostname(),
            pid=os.getpid(),
            op=event.op,
            lane=event.lane,
            cluster=event.cluster,
            since=time.time(),
        )

    def _nodes(self, event: OpEvent, known: tuple[str, ...]) -> tuple[str, ...]:
        cluster = self.inventory.clusters.get(event.cluster)
        nodes = set(known) | set(cluster.nodes if cluster else ())
        node = getattr(event, "node", None)
        if isinstance(node, str) and node in self.inventory.nodes:
            nodes.add(node)
        return tuple(sorted(nodes))

    async def _loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.lease.renew_every_s):
                    await self._changed.wait()
            self._changed.clear()
            await self._flush()
            await asyncio.sleep(WRITE_EVERY_S)

    async def _flush(self) -> None:
        """Write what changed or is due for renewal, remove the ended ones."""
        now = time.monotonic()
        jobs = []
        for run, current in list(self._runs.items()):
            if current.ended:
                jobs += [self._remove(n, current.record) for n in current.written]
                current.written = set()
                del self._runs[run]
            elif current.dirty or now - current.renewed_at >= self.lease.renew_every_s:
                current.dirty, current.renewed_at = False, now
                current.written |= set(current.record.nodes)
                jobs += [self._write(n, current.record) for n in current.record.nodes]
        await asyncio.gather(*jobs)

    async def _write(self, node: str, record: OpRecord) -> None:
        await self._run(node, write_command(node, record))

    async def _remove(self, node: str, record: OpRecord) -> None:
        await self._run(node, remove_command(node, record))

    async def _run(self, node: str, command: list[str]) -> None:
        """One record command; a node known unreachable is not waited for (its record, if it
        has one, goes stale by itself)."""
        if self.pool.state(node).link is Link.UNREACHABLE:
            return
        with contextlib.suppress(SshError):
            await self.pool.run(node, command, timeout=WRITE_TIMEOUT_S)
