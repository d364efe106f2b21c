"""The status model: a pure function of collected facts → one row per node, one per image.

No I/O here: link states, facts and the clock come in as values, so every health rule
(unreachable, stale, down) is testable without SSH.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from cockpit.ops.ownership import Alive, stop_fix
from cockpit.ssh.state import Link, NodeState
from cockpit.status.lock_view import LEASE_ONLY, LockView, node_lock
from cockpit.status.op_view import OpInFlight, operations
from cockpit.status.orphans import Orphans
from cockpit.status.probe import NodeFacts
from cockpit.telemetry.docker_out import (
    ContainerRow,
    exit_code,
    image_with_digest,
    image_with_id,
    lane_of,
)
from cockpit.telemetry.gpu import MemoryView, node_memory_view
from cockpit.telemetry.host import HostLoad


class Health(StrEnum):
    OK = "ok"
    CONNECTING = "connecting"
    STALE = "stale"  # connected, but no data lately
    DOWN = "down"  # unreachable or the link dropped


@dataclass(frozen=True)
class WantedImage:
    """A recipe image the fleet should hold: by digest (for `docker run`) and by id; `placements`
    are (recipe, cluster, its nodes) of the recipes using it: where a sync repairs a node."""

    ref: str
    image_id: str
    recipes: tuple[str, ...]
    placements: tuple[tuple[str, str, tuple[str, ...]], ...] = ()

    def sync_fix(self, node: str) -> str:
        """The command that repairs this image on `node` (a lane placed on that node first)."""
        fallback = (self.recipes[0], "CLUSTER", ())
        recipe, cluster, _ = next(
            (p for p in self.placements if node in p[2]),
            self.placements[0] if self.placements else fallback,
        )
        return f"cockpit sync-image --recipe {recipe} --cluster {cluster}"


class Presence(StrEnum):
    DIGEST = "digest"  # present with its RepoDigest: `docker run repo@sha256:…` works
    ID_ONLY = "id-only"  # loaded without digest (docker save|load): run by digest fails
    WRONG_ID = "wrong-id"  # the digest resolves to an image whose id is not the recipe's pin
    ABSENT = "absent"
    UNKNOWN = "unknown"  # no image inventory from the node yet


@dataclass(frozen=True)
class ContainerView:
    name: str
    image: str
    status: str
    lane: str | None
    orphaned: str | None = None  # why no cockpit looks after it (`cockpit.ops.ownership`)
    state: str = "running"  # or how a lane container that ended is left: exited, dead, created
    exit_code: int | None = None  # an exited one's, when docker said it


@dataclass(frozen=True)
class NodeRow:
    node: str
    health: Health
    detail: str  # why not OK ("unreachable: …", "no data for 12 s"), or ""
    data_age_s: float | None  # seconds since the node last sent anything
    gpu_name: str | None
    util_pct: float | None
    temp_c: float | None
    power_w: float | None
    sm_mhz: float | None
    mem_mhz: float | None
    memory: MemoryView | None
    containers: tuple[ContainerView, ...] | None
    failed: tuple[str, ...]  # facts whose tool failed on the node ("ps exit 127")
    host: HostLoad | None = None  # CPU, links (rates need two slow rounds) and swap
    lock: LockView | None = None  # whoever holds the node's lock (any cockpit's), as last read


@dataclass(frozen=True)
class ImageRow:
    image: WantedImage
    presence: Mapping[str, Presence]  # node → presence


def _age(at: float | None, now: float) -> float | None:
    return None if at is None else max(now - at, 0.0)


def _health(
    link: NodeState, facts: NodeFacts, now: float, stale_after: float
) -> tuple[Health, str]:
    age = _age(facts.heard_at, now)
    if link.link is Link.UNREACHABLE:
        down = _age(link.down_since, now)
        since = f" ({down:.0f} s)" if down is not None and down >= 1 else ""
        return Health.DOWN, f"unreachable{since}: {link.error}"
    if age is None and facts.probe_error:
        return Health.STALE, f"no data: {facts.probe_error}"
    if link.link is not Link.CONNECTED or age is None:
        return Health.CONNECTING, "connecting"
    if age > stale_after:
        why = f": {facts.probe_error}" if facts.probe_error else ""
        return Health.STALE, f"no data for {age:.0f} s{why}"
    return Health.OK, ""


def _container(row: ContainerRow, orphans: Orphans) -> ContainerView:
    label = lane_of(row.labels)
    lane = label.lane if label else None
    orphaned = orphans.get(row.id) if lane else None
    return ContainerView(row.names, row.image, row.status or row.state or "", lane, orphaned)


def _ended(row: ContainerRow) -> ContainerView:
    """A lane container that is not running (a rank that exited): kept until it is removed."""
    label = lane_of(row.labels)
    status = row.status or row.state or ""
    state = row.state or "exited"
    return ContainerView(
        row.names, row.image, status, label.lane if label else None, None, state, exit_code(status)
    )


def node_row(
    node: str,
    link: NodeState,
    facts: NodeFacts,
    now: float,
    stale_after: float,
    orphans: Orphans | None = None,
    gone: Alive = LEASE_ONLY,
) -> NodeRow:
    """One node's row; values are the last known ones even when STALE or DOWN. `orphans`: the
    node's confirmed ones (`cockpit.status.orphans`; without, none is told); `gone` judges its
    lock (default: the lease alone)."""
    health, detail = _health(link, facts, now, stale_after)
    gpu = facts.gpus[min(facts.gpus)] if facts.gpus else None
    containers = (
        None
        if facts.containers is None
        else (
            *(_container(c, orphans or {}) for c in facts.containers),
            *(_ended(c) for c in facts.exited),
        )
    )
    return NodeRow(
        node=node,
        health=health,
        detail=detail,
        data_age_s=_age(facts.heard_at, now),
        gpu_name=gpu.name if gpu else None,
        util_pct=gpu.utilization_pct if gpu else None,
        temp_c=gpu.temperature_c if gpu else None,
        power_w=gpu.power_w if gpu else None,
        sm_mhz=gpu.clock_sm_mhz if gpu else None,
        mem_mhz=gpu.clock_mem_mhz if gpu else None,
        memory=node_memory_view(facts.gpus.values(), facts.meminfo, facts.apps),
        containers=containers,
        failed=tuple(f"{tag} exit {code}" for tag, code in sorted(facts.failed.items())),
        host=facts.host_load(),
        lock=node_lock(node, facts, now, gone),
    )


def presence(facts: NodeFacts, image: WantedImage) -> Presence:
    if facts.images is None:
        return Presence.UNKNOWN
    found = image_with_digest(facts.images, image.ref)
    if found is not None:
        pinned = not image.image_id or image_with_id([found], image.image_id) is not None
        return Presence.DIGEST if pinned else Presence.WRONG_ID
    if image.image_id and image_with_id(facts.images, image.image_id) is not None:
        return Presence.ID_ONLY
    return Presence.ABSENT


class _RecipeLike(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def image(self) -> _ImageLike: ...


class _ImageLike(Protocol):
    @property
    def ref(self) -> str: ...
    @property
    def image_id(self) -> str: ...


Placements = Mapping[str, tuple[tuple[str, tuple[str, ...]], ...]]
"""recipe name → its clusters (in the recipe's order) with their nodes."""


def wanted_images(
    recipes: Iterable[_RecipeLike], placements: Placements | None = None
) -> list[WantedImage]:
    """The distinct recipe images, each with the recipes that use it (inventory order)."""
    by_ref: dict[str, tuple[str, list[str]]] = {}
    for recipe in recipes:
        _, names = by_ref.setdefault(recipe.image.ref, (recipe.image.image_id, []))
        names.append(recipe.name)
    where = placements or {}
    return [
        WantedImage(
            ref,
            image_id,
            tuple(names),
            tuple((n, c, nodes) for n in names for c, nodes in where.get(n, ())),
        )
        for ref, (image_id, names) in by_ref.items()
    ]


@dataclass(frozen=True)
class StatusProblem:
    """Something wrong on a node that the operator can fix, with the command that fixes it."""

    node: str
    message: str
    fix: str


@dataclass(frozen=True)
class FleetStatus:
    rows: tuple[NodeRow, ...]
    images: tuple[ImageRow, ...]
    at: float  # wall time of the snapshot
    problems: tuple[StatusProblem, ...] = ()
    unknown: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # node → facts not in yet
    operations: tuple[OpInFlight, ...] = ()  # every cockpit's, as the nodes record them

    @property
    def complete(self) -> bool:
        """Every node that is not DOWN sent (or failed) every kind of fact."""
        return not self.unknown


def orphan_problems(rows: Iterable[NodeRow]) -> list[StatusProblem]:
    """One problem per orphaned lane on a node, with the command that stops it."""
    out = []
    for row in rows:
        orphans: dict[str, tuple[str, list[str]]] = {}
        for c in row.containers or ():
            if c.orphaned and c.lane:
                orphans.setdefault(c.lane, (c.orphaned, []))[1].append(c.name)
        for lane, (why, names) in orphans.items():
            message = f"{', '.join(names)} of lane {lane} orphaned: {why}"
            out.append(StatusProblem(row.node, message, stop_fix(lane)))
    return out


def ended_problems(
    rows: Iterable[NodeRow], in_flight: Sequence[OpInFlight] = ()
) -> list[StatusProblem]:
    """One problem per lane container that ended and was not removed: a rank of that lane
    failed (the TUI shows the lane failed); a stop removes it, then the lane can be launched
    again. While a cockpit's operation on that lane is in flight (a stop under way leaves its
    ranks exited for a moment, a launch may be rolling back), the fix is to let it finish: a
    stop offered then would act on what is only a moment of that operation."""
    busy = {op.record.lane: op.record for op in in_flight if op.record.lane and not op.stale}
    problems = []
    for row in rows:
        for c in row.containers or ():
            if not c.lane or c.state == "running":
                continue
            code = f" (code {c.exit_code})" if c.exit_code is not None else ""
            running = busy.get(c.lane)
            fix = (
                f"none now: {running.what} by {running.holder} is in flight; read again after it"
                if running
                else stop_fix(c.lane)
            )
            problems.append(
                StatusProblem(row.node, f"{c.name} of lane {c.lane} {c.state}{code}", fix)
            )
    return problems


def image_problems(rows: Iterable[ImageRow]) -> list[StatusProblem]:
    """Every node whose recipe digest resolves to another image than the pinned id."""
    return [
        StatusProblem(
            node,
            f"{row.image.ref} resolves to another image than the pinned id {row.image.image_id}",
            row.image.sync_fix(node),
        )
        for row in rows
        for node, seen in row.presence.items()
        if seen is Presence.WRONG_ID
    ]


def fleet_status(
    links: Mapping[str, NodeState],
    facts: Mapping[str, NodeFacts],
    wanted: Sequence[WantedImage],
    now: float,
    stale_after: float = 5.0,
    orphans: Mapping[str, Orphans] | None = None,
    gone: Alive = LEASE_ONLY,
) -> FleetStatus:
    """The whole status for the nodes of `links` (in their order); `orphans`: node → its
    confirmed orphans; `gone` judges the nodes' locks."""
    empty = NodeFacts()
    rows = tuple(
        node_row(
            node, link, facts.get(node, empty), now, stale_after, (orphans or {}).get(node), gone
        )
        for node, link in links.items()
    )
    images = tuple(
        ImageRow(image, {node: presence(facts.get(node, empty), image) for node in links})
        for image in wanted
    )
    down = {row.node for row in rows if row.health is Health.DOWN}
    unknown = {
        node: missing
        for node in links
        if node not in down and (missing := facts.get(node, empty).unknown())
    }
    in_flight = operations(facts, now)
    problems = (
        *orphan_problems(rows),
        *ended_problems(rows, in_flight),
        *image_problems(images),
    )
    return FleetStatus(rows, images, now, problems, unknown, in_flight)
