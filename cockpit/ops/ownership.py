"""Who owns a lane's containers, recorded on the nodes themselves; and which ones are orphaned.

A launch writes a lane marker on every node of the lane before it starts a rank:
`$HOME/.cockpit/lanes/<node>.<lane>.json`, one JSON line naming the lane, its cluster, the
launching cockpit (user@host, pid) and the token of the lock it holds, in state "launching". When
the lane is ready the marker turns "ready"; a rollback or a stop removes it. So a node alone
tells whether its containers are looked after:

- marker "ready": the lane reached ready under a live owner; it serves, nobody needs to hold it;
- marker "launching" and the node's lock still held, with the marker's token, by a live holder:
  a launch is under way;
- anything else (the lock gone or stale, no marker at all): the launching cockpit is gone and
  the containers are orphaned; `cockpit stop --lane L` removes them.

Everything here is pure but the two command builders, whose values go as arguments to constant
scripts (never formatted into them).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace

from cockpit.ops.locks import LEASE, LockRecord, NodeLock, stale_reason

LAUNCHING = "launching"
READY = "ready"

_WRITE = """\
dir="$HOME/.cockpit/lanes"; file="$dir/$1"
mkdir -p -- "$dir" && printf '%s\\n' "$2" > "$file.$$.tmp" && mv -f -- "$file.$$.tmp" "$file"
"""
_REMOVE = """\
node=$1; shift
for lane in "$@"; do rm -f -- "$HOME/.cockpit/lanes/$node.$lane.json"; done
exit 0
"""


@dataclass(frozen=True)
class LaneMarker:
    """A lane's container on a node, as its launch recorded it."""

    lane: str
    cluster: str
    node: str
    owner: str  # user@host of the launching cockpit
    pid: int
    token: str  # the token of the lock the launch holds
    state: str  # LAUNCHING or READY
    since: float

    def dumps(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    @classmethod
    def loads(cls, text: str) -> LaneMarker | None:
        try:
            data = json.loads(text)
            return cls(
                lane=str(data["lane"]),
                cluster=str(data.get("cluster", "")),
                node=str(data["node"]),
                owner=str(data.get("owner", "")),
                pid=int(data.get("pid", 0)),
                token=str(data.get("token", "")),
                state=str(data.get("state", LAUNCHING)),
                since=float(data.get("since", 0.0)),
            )
        except (ValueError, KeyError, TypeError):
            return None

    def file_name(self) -> str:
        return f"{self.node}.{self.lane}.json"

    def ready(self) -> LaneMarker:
        return replace(self, state=READY)


def new_marker(lane: str, cluster: str, node: str, lock: LockRecord) -> LaneMarker:
    return LaneMarker(
        lane=lane,
        cluster=cluster,
        node=node,
        owner=f"{lock.user}@{lock.host}",
        pid=lock.pid,
        token=lock.token,
        state=LAUNCHING,
        since=lock.since,
    )


def write_marker_command(marker: LaneMarker) -> list[str]:
    return ["bash", "-c", _WRITE, "cockpit-lane", marker.file_name(), marker.dumps()]


def remove_markers_command(node: str, lanes: list[str]) -> list[str]:
    return ["bash", "-c", _REMOVE, "cockpit-lane-rm", node, *lanes]


@dataclass(frozen=True)
class Ownership:
    """What one node's lock file and lane markers say (the status probe's `own` section)."""

    lock: NodeLock | None = None
    markers: Mapping[str, LaneMarker] = field(default_factory=dict)  # lane → marker


def parse_ownership(node: str, text: str) -> Ownership:
    """The probe's `own` section on `node` → its lock and its lane markers (other nodes' files,
    as on a home directory shared over NFS, and unreadable lane markers are ignored; an
    unreadable lock is a lock: it still holds the node)."""
    lock: NodeLock | None = None
    markers: dict[str, LaneMarker] = {}
    for line in text.splitlines():
        name, sep, content = line.partition("\t")
        if not sep:
            continue
        if name == f"{node}.lock":
            lock = NodeLock.parse(content)
        elif name.startswith(f"{node}.") and name.endswith(".json"):
            marker = LaneMarker.loads(content)
            if marker is not None and marker.node == node:
                markers[marker.lane] = marker
    return Ownership(lock, markers)


Alive = Callable[[NodeLock], str | None]
"""Why a lock's holder is gone (`stale_reason` on a given host), None while it lives."""


def holder_check(local_host: str, pid_alive: Callable[[int], bool]) -> Alive:
    """The lease's stale rule as seen from `local_host` (whose pids it can tell)."""
    return lambda lock: stale_reason(lock, LEASE.seconds, local_host, pid_alive)


def orphan_reason(lane: str, owned: Ownership, gone: Alive) -> str | None:
    """Why the running containers of `lane` on this node have no owner, None when they have."""
    marker = owned.markers.get(lane)
    lock = owned.lock
    record = lock.record if lock is not None else None
    if marker is not None and marker.state == READY:
        return None
    if marker is None:
        if lock is not None and record is not None and record.lane == lane and gone(lock) is None:
            return None  # an operation on this lane holds the node right now
        return "no launch record on the node (started outside a cockpit launch, or by one killed)"
    launcher = f"its launch by {marker.owner} (pid {marker.pid})"
    if lock is None or record is None or record.token != marker.token:
        return f"{launcher} never reached ready and holds no lock any more"
    why = gone(lock)
    if why is not None:
        return f"{launcher} never reached ready and is gone ({why})"
    return None


def stop_fix(lane: str) -> str:
    return f"cockpit stop --lane {lane}"
