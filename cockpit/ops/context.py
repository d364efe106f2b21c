"""What every operation needs: the inventory, the SSH pool, the boot history, and event helpers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field

from cockpit.config import Inventory
from cockpit.errors import EXIT_FAILED, EXIT_OK, EXIT_REFUSED
from cockpit.events import (
    Finished,
    LockBroken,
    Notice,
    OpEvent,
    Planned,
    Progress,
    Severity,
    StepFinished,
    StepStarted,
)
from cockpit.ops.history import BootHistory
from cockpit.ops.locks import (
    LEASE,
    BreakLock,
    BrokenLock,
    Lease,
    LockRecord,
    NodeLocks,
    break_lock_command,
    lost_message,
    new_record,
)
from cockpit.ssh import SshPool


@dataclass
class OpContext:
    """One cockpit's handle on the fleet; operations borrow it, the caller closes the pool."""

    inventory: Inventory
    pool: SshPool
    history: BootHistory = field(default_factory=BootHistory.default)
    lease: Lease = LEASE
    break_lock: BreakLock | None = None  # `--break-lock`: asked before a live lock is broken
    sync_width: int = 1  # relay chains fed by the source (1: one chain; peers: a star)

    @property
    def production_clusters(self) -> frozenset[str]:
        return frozenset(n for n, c in self.inventory.clusters.items() if c.production)


@dataclass(frozen=True)
class Emit:
    """Builds the events of one operation on one lane/cluster (fills op, lane, cluster)."""

    op: str
    lane: str = ""
    cluster: str = ""

    def _kw(self) -> dict[str, str]:
        return {"op": self.op, "lane": self.lane, "cluster": self.cluster}

    def planned(self, steps: tuple[str, ...], summary: str, memory: str = "") -> Planned:
        return Planned(steps=steps, summary=summary, memory=memory, **self._kw())

    def started(self, step: str, node: str | None = None) -> StepStarted:
        return StepStarted(step=step, node=node, **self._kw())

    def finished(
        self, step: str, node: str | None = None, ok: bool = True, detail: str = ""
    ) -> StepFinished:
        return StepFinished(step=step, node=node, ok=ok, detail=detail, **self._kw())

    def progress(self, step: str, node: str | None = None, **values: object) -> Progress:
        return Progress(step=step, node=node, **values, **self._kw())  # type: ignore[arg-type]

    def notice(
        self,
        message: str,
        node: str | None = None,
        line: str = "",
        error: bool = False,
        check: str = "",
    ) -> Notice:
        severity = Severity.ERROR if error else Severity.WARNING
        return Notice(
            severity=severity, message=message, node=node, line=line, check=check, **self._kw()
        )

    def lock_broken(self, broken: BrokenLock) -> LockBroken:
        return LockBroken(
            severity=Severity.WARNING,
            message=broken.message(),
            node=broken.node,
            holder=broken.holder,
            forced=broken.forced,
            **self._kw(),
        )

    def info(self, message: str, node: str | None = None) -> Notice:
        return Notice(severity=Severity.INFO, message=message, node=node, **self._kw())

    def end(self, outcome: Outcome) -> Finished:
        return Finished(
            ok=outcome.code == EXIT_OK,
            summary=outcome.summary,
            exit_code=outcome.code,
            **self._kw(),
        )

    def refusal(self, outcome: Outcome, reason: str) -> tuple[Planned, Finished]:
        """An operation refused before it planned anything: an empty plan saying why, its end."""
        outcome.refuse(reason)
        return self.planned((), reason), self.end(outcome)


@dataclass
class Outcome:
    """How a sub-operation ended; operations that compose others (switch) read it."""

    code: int = EXIT_OK
    summary: str = ""

    def refuse(self, summary: str) -> None:
        self.code, self.summary = EXIT_REFUSED, summary

    def fail(self, summary: str) -> None:
        self.code, self.summary = EXIT_FAILED, summary

    def done(self, summary: str) -> None:
        self.code, self.summary = EXIT_OK, summary

    def warn(self, warning: str) -> None:
        """Said with the summary, whatever the outcome (a lock lost while it ran)."""
        self.summary = f"{self.summary} (warning: {warning})" if self.summary else warning

    @property
    def ok(self) -> bool:
        return self.code == EXIT_OK


class OpLocks:
    """The one way every operation takes its nodes' locks: the "lock" step, a `LockBroken` for
    each lock taken over (stale, or broken on request) naming its holder, and a refusal that
    leaves nothing held and says the way out. The locks are renewed while held (a lease)."""

    def __init__(self, ctx: OpContext, emit: Emit) -> None:
        self.emit = emit
        record = new_record(emit.op, emit.lane or emit.cluster)
        self.locks = NodeLocks(
            ctx.pool,
            record,
            ctx.lease,
            # a stop is the way out of trouble: a holder that missed a renewal does not block it
            stale_after_s=ctx.lease.missed_renewal_s if emit.op == "stop" else None,
            breaker=ctx.break_lock,
            again=break_lock_command(emit.op, emit.lane, emit.cluster),
        )
        self._outcome: Outcome | None = None

    async def acquire(self, nodes: Iterable[str], outcome: Outcome) -> AsyncIterator[OpEvent]:
        """Lock `nodes`; on a refusal `outcome` is refused (the caller then ends), and once they
        are released it warns of every lock another cockpit broke while it ran. An operation
        closed while it yields these events (before its own clean-up begins) releases them
        here: renewed, they would hold the nodes for as long as this process runs."""
        self._outcome = outcome
        read_to_the_end = False
        try:
            yield self.emit.started("lock")
            refused = await self.locks.acquire(nodes)
            for broken in self.locks.broken:
                yield self.emit.lock_broken(broken)
            if refused:
                yield self.emit.finished("lock", ok=False, detail=str(refused[0]))
                outcome.refuse("; ".join(str(r) for r in refused))
            else:
                yield self.emit.finished("lock")
            read_to_the_end = True
        finally:
            if not read_to_the_end:
                await asyncio.shield(self.locks.release())

    @property
    def record(self) -> LockRecord:
        """This operation's lock record (a launch names its token in its lane markers)."""
        return self.locks.record

    async def release(self) -> None:
        await self.locks.release()
        lost = sorted(self.locks.lost.items())
        if lost and self._outcome is not None:
            self._outcome.warn("; ".join(lost_message(node, now) for node, now in lost))
