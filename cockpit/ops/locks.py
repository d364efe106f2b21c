"""Operation locks held on the nodes themselves, so two cockpits on two machines exclude each other.

A node's lock is the file `$HOME/.cockpit/locks/<node>.lock` on that node, created atomically with
`ln` (a hard link fails when the target exists) from a temporary file holding one JSON record:
who (user@host, pid), what (operation, lane) and since when. The node's name is in the file name
so that a home directory shared between nodes (NFS) still gives one lock per node.

Stale rule (`stale_reason`): the holder ran on this same host and its pid is gone, or the lock is
older than its TTL. A stale lock is removed only if its content is still what was read.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import json
import os
import secrets
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from cockpit.pids import pid_exists
from cockpit.ssh import SshError, SshPool

LOCK_TTL_S = 6 * 3600.0
LOCK_TIMEOUT_S = 15.0

_ACQUIRE = """\
dir="$HOME/.cockpit/locks"; lock="$dir/$1.lock"; tmp="$lock.$$.tmp"
mkdir -p -- "$dir" || exit 3
printf '%s\\n' "$2" > "$tmp" || exit 3
if ln -- "$tmp" "$lock" 2>/dev/null; then rm -f -- "$tmp"; echo acquired; exit 0; fi
rm -f -- "$tmp"; echo held; cat -- "$lock" 2>/dev/null; exit 1
"""
_RELEASE = """\
lock="$HOME/.cockpit/locks/$1.lock"
[ "$(cat -- "$lock" 2>/dev/null)" = "$2" ] && rm -f -- "$lock"
exit 0
"""


@dataclass(frozen=True)
class LockRecord:
    """Who holds a node, for what, since when (epoch seconds)."""

    user: str
    host: str
    pid: int
    operation: str
    since: float
    lane: str = ""
    token: str = field(default_factory=lambda: secrets.token_hex(6))
    ttl_s: float = LOCK_TTL_S

    def dumps(self) -> str:
        """The one-line form stored in the lock file (compared byte for byte on release)."""
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    @classmethod
    def loads(cls, text: str) -> LockRecord | None:
        """The record in a lock file, None when it is not one (a foreign or truncated file)."""
        try:
            data = json.loads(text)
            return cls(
                user=str(data["user"]),
                host=str(data["host"]),
                pid=int(data["pid"]),
                operation=str(data["operation"]),
                since=float(data["since"]),
                lane=str(data.get("lane", "")),
                token=str(data.get("token", "")),
                ttl_s=float(data.get("ttl_s", LOCK_TTL_S)),
            )
        except (ValueError, KeyError, TypeError):
            return None

    def held_message(self) -> str:
        when = datetime.fromtimestamp(self.since, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        what = f"{self.operation} {self.lane}".strip()
        return f"held by {self.user}@{self.host} since {when} for operation {what}"


def new_record(operation: str, lane: str = "", ttl_s: float = LOCK_TTL_S) -> LockRecord:
    """A record for this process on this host."""
    return LockRecord(
        user=getpass.getuser(),
        host=socket.gethostname(),
        pid=os.getpid(),
        operation=operation,
        since=time.time(),
        lane=lane,
        ttl_s=ttl_s,
    )


def stale_reason(
    record: LockRecord, now: float, local_host: str, alive: Callable[[int], bool]
) -> str | None:
    """Why the lock may be broken, or None when it is live."""
    if record.host == local_host and not alive(record.pid):
        return f"its process {record.pid} on {record.host} is gone"
    if now - record.since > record.ttl_s:
        return f"older than its TTL of {record.ttl_s / 3600:g} h"
    return None


def acquire_command(node: str, record: LockRecord) -> list[str]:
    return ["bash", "-c", _ACQUIRE, "cockpit-lock", node, record.dumps()]


def release_command(node: str, content: str) -> list[str]:
    return ["bash", "-c", _RELEASE, "cockpit-unlock", node, content]


@dataclass(frozen=True)
class LockRefused:
    """The nodes could not all be locked: which node, and the holder's message."""

    node: str
    message: str

    def __str__(self) -> str:
        return f"{self.node} is locked: {self.message}"


class NodeLocks:
    """Locks for one operation on a set of nodes: all or none (a partial take is rolled back)."""

    def __init__(self, pool: SshPool, record: LockRecord) -> None:
        self.pool = pool
        self.record = record
        self.held: list[str] = []
        self.broken: list[tuple[str, str]] = []  # (node, why) stale locks this take removed

    async def acquire(self, nodes: Iterable[str]) -> list[LockRefused]:
        """Take every reachable node's lock; unreachable nodes are skipped (preflight names
        them). On a refusal nothing stays held and the refusal is returned."""
        # One node at a time in name order: of two cockpits racing for the same nodes, the one
        # that takes the first node wins and the other is refused there (no split win).
        for node in sorted(set(nodes) - set(self.held)):
            refused = await self._take(node)
            if refused is not None:
                await self.release()
                return [refused]
        return []

    async def _take(self, node: str, retry: bool = True) -> LockRefused | None:
        try:
            result = await self.pool.run(
                node, acquire_command(node, self.record), timeout=LOCK_TIMEOUT_S
            )
        except SshError:
            return None
        if result.ok:
            self.held.append(node)
            return None
        if result.exit_status != 1:
            return LockRefused(node, f"cannot write the lock file: {result.stderr.strip()}")
        content = result.stdout.split("\n", 1)[1].strip() if "\n" in result.stdout else ""
        holder = LockRecord.loads(content)
        if holder is None:
            return LockRefused(node, f"held by an unreadable lock file ({content[:80]!r})")
        why = stale_reason(holder, time.time(), socket.gethostname(), pid_exists)
        if why is None or not retry:
            return LockRefused(node, holder.held_message())
        await self._remove(node, content)
        self.broken.append((node, f"stale lock removed ({why}): {holder.held_message()}"))
        return await self._take(node, retry=False)

    async def _remove(self, node: str, content: str) -> None:
        with contextlib.suppress(SshError):
            await self.pool.run(node, release_command(node, content), timeout=LOCK_TIMEOUT_S)

    async def release(self) -> None:
        """Release every lock this object holds (only if the file is still ours)."""
        held, self.held = self.held, []
        await asyncio.gather(*(self._remove(n, self.record.dumps()) for n in held))
