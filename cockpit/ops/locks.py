"""Operation locks held on the nodes themselves, so two cockpits on two machines exclude each other.

A node's lock is the file `$HOME/.cockpit/locks/<node>.lock` on that node, created atomically with
`ln` (a hard link fails when the target exists) from a temporary file holding one JSON record:
who (user@host, pid), what (operation, lane) and since when. The node's name is in the file name
so that a home directory shared between nodes (NFS) still gives one lock per node.

A lock is a lease (`Lease`): its holder touches the file while it lives, and a lock whose file
was not touched for one lease is stale, wherever and however its holder died. The node's clock
judges the age (the file's mtime against the node's time, read in one command on the node), never
the record's own `since`, so neither a foreign clock nor a forged record can keep a node locked.
The stale rules are in `stale_reason`; a stale lock is removed only if it is still what was read.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import json
import os
import secrets
import shlex
import socket
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from cockpit.pids import pid_exists
from cockpit.ssh import SshError, SshPool


@dataclass(frozen=True)
class Lease:
    """How long a lock lives without being renewed, and how often its holder renews it.

    60 s: a cockpit that dies (kill -9, a laptop closed, a lost network) frees its nodes within
    a minute, long enough that a slow SSH round or a busy node never expires a live holder.
    Renewed every 15 s: a live holder's lock is never older than 15 s plus one SSH round, so a
    lease survives three renewals in a row that are lost or late. `stop` does not wait a whole
    lease: a lock not renewed for two renewal periods (30 s) has a holder that missed a renewal,
    which a live one does not, and `stop` is the way out of trouble, so it takes that lock over.
    """

    seconds: float = 60.0
    renew_every_s: float = 15.0

    @property
    def missed_renewal_s(self) -> float:
        """The age past which a lock's holder has missed a renewal: `stop` takes it over."""
        return 2 * self.renew_every_s


LEASE = Lease()
LOCK_TIMEOUT_S = 15.0
"""Seconds one lock command (take, renew, break, release) may take on a node."""

LOCK_LINE_SH = """\
lock_line() {  # $1: a lock file -> "<age in ms by this node's clock><TAB><its first line>"
  local line= now mtime
  IFS= read -r line 2>/dev/null <"$1"
  mtime=$(date -r "$1" +%s%6N 2>/dev/null) || return 1
  now=${EPOCHREALTIME//[!0-9]/}; [ -n "$now" ] || now=$(date +%s%6N)
  printf '%s\\t%s\\n' "$(( (now - mtime) / 1000 ))" "$line"
}
"""
"""A bash function for every script that reads a lock (the status probe's too): the age comes
from the node's clock in the same command that reads the record."""

_ACQUIRE = (
    LOCK_LINE_SH
    + """\
dir="$HOME/.cockpit/locks"; lock="$dir/$1.lock"; tmp="$lock.$$.tmp"
mkdir -p -- "$dir" || exit 3
printf '%s\\n' "$2" > "$tmp" || exit 3
if ln -- "$tmp" "$lock" 2>/dev/null; then rm -f -- "$tmp"; echo acquired; exit 0; fi
rm -f -- "$tmp"; echo held; lock_line "$lock"; exit 1
"""
)
_RENEW = """\
lock="$HOME/.cockpit/locks/$1.lock"; now=$(head -c 4096 -- "$lock" 2>/dev/null)
[ "$now" = "$2" ] || { printf 'lost\\n%s\\n' "$now"; exit 0; }
touch -c -- "$lock" && echo renewed
"""
_BREAK = (
    LOCK_LINE_SH
    + """\
lock="$HOME/.cockpit/locks/$1.lock"
line=$(lock_line "$lock") || exit 0
[ "${line#*$'\\t'}" = "$2" ] && [ "${line%%$'\\t'*}" -ge "$3" ] || { echo changed; exit 1; }
rm -f -- "$lock"
"""
)
_RELEASE = """\
lock="$HOME/.cockpit/locks/$1.lock"
[ "$(cat -- "$lock" 2>/dev/null)" = "$2" ] && rm -f -- "$lock"
exit 0
"""


@dataclass(frozen=True)
class LockRecord:
    """Who holds a node, for what, since when (epoch seconds, the holder's clock: shown, never
    used to judge the lock's age)."""

    user: str
    host: str
    pid: int
    operation: str
    since: float
    lane: str = ""
    token: str = field(default_factory=lambda: secrets.token_hex(6))

    def dumps(self) -> str:
        """The one-line form stored in the lock file (compared byte for byte on release)."""
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    @classmethod
    def loads(cls, text: str) -> LockRecord | None:
        """The record in a lock file, None when it is not one (a foreign or truncated file).
        Fields it does not know (an older cockpit's `ttl_s`) are ignored."""
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
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return None

    @property
    def holder(self) -> str:
        return f"{self.user}@{self.host}"

    @property
    def what(self) -> str:
        return f"{self.operation} {self.lane}".strip()

    def held_message(self) -> str:
        when = datetime.fromtimestamp(self.since, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        return f"held by {self.holder} since {when} for operation {self.what}"


@dataclass(frozen=True)
class NodeLock:
    """A node's lock as read on the node: its first line and its age by the node's clock."""

    content: str
    age_s: float  # since it was written or last renewed

    @classmethod
    def parse(cls, line: str) -> NodeLock | None:
        """`lock_line`'s output, None when it is not one."""
        age, sep, content = line.partition("\t")
        try:
            return cls(content, max(int(age) / 1000, 0.0)) if sep else None
        except ValueError:
            return None

    @property
    def record(self) -> LockRecord | None:
        return LockRecord.loads(self.content)

    def held_message(self) -> str:
        record = self.record
        if record is None:
            return (
                f"held by an unreadable lock file ({self.content[:80]!r}, "
                f"written {self.age_s:.0f} s ago)"
            )
        return f"{record.held_message()} (renewed {self.age_s:.0f} s ago)"


def new_record(operation: str, lane: str = "") -> LockRecord:
    """A record for this process on this host."""
    return LockRecord(
        user=getpass.getuser(),
        host=socket.gethostname(),
        pid=os.getpid(),
        operation=operation,
        since=time.time(),
        lane=lane,
    )


def stale_reason(
    lock: NodeLock, stale_after_s: float, local_host: str, alive: Callable[[int], bool]
) -> str | None:
    """Why the lock may be taken over, or None when it is live. A lock not renewed for
    `stale_after_s` is stale, an empty or unreadable one too (a node that lost power while it
    was written); younger, an unreadable one is being written by someone right now."""
    record = lock.record
    if record is None:
        if lock.age_s >= stale_after_s:
            return f"an unreadable lock file not written for {lock.age_s:.0f} s"
        return None
    if record.host == local_host and not alive(record.pid):
        return f"its process {record.pid} on {record.host} is gone"
    if lock.age_s >= stale_after_s:
        return f"not renewed for {lock.age_s:.0f} s"
    return None


_RERUN = {
    "launch": "cockpit launch -r {lane} -c {cluster}",
    "switch": "cockpit switch -r {lane} -c {cluster}",
    "sync": "cockpit sync-image -r {lane} -c {cluster}",
    "sync-model": "cockpit sync-model -r {lane} -c {cluster}",
}


def break_lock_command(op: str, lane: str, cluster: str) -> str:
    """The command that runs this operation again, breaking the locks in its way."""
    if op == "stop":
        scope = f"--lane {shlex.quote(lane)}" if lane else f"--cluster {shlex.quote(cluster)}"
        return f"cockpit stop {scope} --break-lock"
    if op in _RERUN:
        again = _RERUN[op].format(lane=shlex.quote(lane), cluster=shlex.quote(cluster))
        return f"{again} --break-lock"
    return f"cockpit stop --cluster {shlex.quote(cluster)} --break-lock"  # restore: TUI only


def lock_fix(lock: NodeLock, again: str, stale_after_s: float) -> str:
    """The way out of a live lock: wait for its holder (who takes it over when, if the holder
    is gone), or break it."""
    record = lock.record
    whose = f"{record.holder}'s {record.operation}" if record else "whoever is writing it"
    stale_in = max(stale_after_s - lock.age_s, 1.0)
    return (
        f"wait for {whose} to finish (if it is gone, its lock is stale in {stale_in:.0f} s), "
        f"or {again}"
    )


def lost_message(node: str, now: str) -> str:
    """A lock this operation held was gone when it came to renew it: what holds the node now."""
    holder = LockRecord.loads(now)
    if holder is not None:
        now_held = f"held by {holder.holder} for operation {holder.what} now"
    else:
        now_held = "an unreadable lock file now" if now else "no lock now"
    return f"{node}'s lock was broken while this ran ({now_held})"


def acquire_command(node: str, record: LockRecord) -> list[str]:
    return ["bash", "-c", _ACQUIRE, "cockpit-lock", node, record.dumps()]


def renew_command(node: str, content: str) -> list[str]:
    return ["bash", "-c", _RENEW, "cockpit-renew", node, content]


def break_command(node: str, content: str, older_than_ms: int) -> list[str]:
    """Remove the lock only while it holds `content` and is still that old (not renewed)."""
    return ["bash", "-c", _BREAK, "cockpit-break", node, content, str(older_than_ms)]


def release_command(node: str, content: str) -> list[str]:
    return ["bash", "-c", _RELEASE, "cockpit-unlock", node, content]


@dataclass(frozen=True)
class LockRefused:
    """A node could not be locked: which node, what holds it, and the way out."""

    node: str
    message: str
    fix: str

    def __str__(self) -> str:
        return f"{self.node} is locked: {self.message} — fix: {self.fix}"


@dataclass(frozen=True)
class BrokenLock:
    """A lock this take removed: on which node, whose, why (stale, or broken on request)."""

    node: str
    lock: NodeLock
    why: str
    forced: bool

    @property
    def holder(self) -> str:
        record = self.lock.record
        return record.holder if record else "an unreadable lock file"

    def message(self) -> str:
        if self.forced:
            return f"lock broken ({self.why}): {self.lock.held_message()}"
        return f"stale lock removed ({self.why}): {self.lock.held_message()}"


BreakLock = Callable[[str, NodeLock], Awaitable[bool]]
"""Asked before a live lock is broken (`--break-lock`): node, its lock → whether to break it."""


class NodeLocks:
    """Locks for one operation on a set of nodes: all or none (a partial take is rolled back),
    renewed in the background while held."""

    def __init__(
        self,
        pool: SshPool,
        record: LockRecord,
        lease: Lease = LEASE,
        *,
        stale_after_s: float | None = None,
        breaker: BreakLock | None = None,
        again: str = "",
    ) -> None:
        self.pool = pool
        self.record = record
        self.lease = lease
        self.stale_after_s = lease.seconds if stale_after_s is None else stale_after_s
        self.breaker = breaker
        self.again = again or "run it again with --break-lock"
        self.held: list[str] = []
        self.broken: list[BrokenLock] = []  # locks this take removed
        self.lost: dict[str, str] = {}  # node → what its lock file held when ours was gone
        self._renewing: asyncio.Task[None] | None = None

    async def acquire(self, nodes: Iterable[str]) -> list[LockRefused]:
        """Take every reachable node's lock; unreachable nodes are skipped (preflight names
        them). On a refusal nothing stays held and the refusal is returned."""
        # One node at a time in name order: of two cockpits racing for the same nodes, the one
        # that takes the first node wins and the other is refused there (no split win).
        try:
            for node in sorted(set(nodes) - set(self.held)):
                refused = await self._take(node)
                if refused is not None:
                    await self.release()
                    return [refused]
                if self.held and self._renewing is None:
                    self._renewing = asyncio.create_task(self._renew_loop())
        except BaseException:  # a question unanswered, a signal: nothing stays held
            await asyncio.shield(self.release())
            raise
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
            return LockRefused(
                node, f"cannot write the lock file: {result.stderr.strip()}", "check $HOME there"
            )
        lock = NodeLock.parse(result.stdout.partition("\n")[2].strip("\n"))
        if lock is None:  # it went between our link and our read: try once more
            return await self._take(node, retry=False) if retry else None
        why = stale_reason(lock, self.stale_after_s, socket.gethostname(), pid_exists)
        forced = why is None and retry and self.breaker is not None
        if forced and self.breaker is not None:
            if not await self.breaker(node, lock):
                return self._refused(node, lock, "; not broken: not confirmed")
            why = "--break-lock"
        if why is None or not retry:
            return self._refused(node, lock)
        older_than_ms = 0 if forced else int(lock.age_s * 1000)
        if not await self._break(node, lock.content, older_than_ms):
            return self._refused(node, lock)
        self.broken.append(BrokenLock(node, lock, why, forced))
        return await self._take(node, retry=False)

    def _refused(self, node: str, lock: NodeLock, why: str = "") -> LockRefused:
        fix = lock_fix(lock, self.again, self.stale_after_s)
        return LockRefused(node, lock.held_message() + why, fix)

    async def _break(self, node: str, content: str, older_than_ms: int) -> bool:
        """Remove a lock still holding `content` and not renewed since it was read."""
        try:
            done = await self.pool.run(
                node, break_command(node, content, older_than_ms), timeout=LOCK_TIMEOUT_S
            )
        except SshError:
            return False
        return done.ok

    async def _renew_loop(self) -> None:
        while True:
            await asyncio.sleep(self.lease.renew_every_s)
            await asyncio.gather(*(self._renew(node) for node in list(self.held)))

    async def _renew(self, node: str) -> None:
        """Touch the node's lock while it is ours; one that is no longer ours is not taken back.
        A node that does not answer is tried again at the next renewal."""
        try:
            done = await self.pool.run(
                node, renew_command(node, self.record.dumps()), timeout=LOCK_TIMEOUT_S
            )
        except SshError:
            return
        said, _, now = done.stdout.partition("\n")
        if said == "lost" and node in self.held:
            self.held.remove(node)
            self.lost[node] = now.strip()

    async def _remove(self, node: str, content: str) -> None:
        with contextlib.suppress(SshError):
            await self.pool.run(node, release_command(node, content), timeout=LOCK_TIMEOUT_S)

    async def release(self) -> None:
        """Stop renewing, then release every lock this object holds (only if still ours)."""
        if self._renewing is not None:
            self._renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewing
            self._renewing = None
        held, self.held = self.held, []
        await asyncio.gather(*(self._remove(n, self.record.dumps()) for n in held))
