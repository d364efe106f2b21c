"""The one state store: facts in (typed inputs), immutable snapshots out.

Only the Textual event loop touches a `Store`; pollers and operations reach it through messages.
Every buffer is bounded (deque maxlen), so a cockpit left open for weeks uses the same memory as
one opened a minute ago.

What the nodes report is the state (`cockpit.tui.state.lanes`); an operation is kept per run (the
worker that runs it) only while it runs, and whatever its events name (a switch's nested sync
says op "sync"), they belong to that run. Engine views, NCCL transports and boot states exist for
lanes whose containers the nodes list, and go with them.

The parts live beside it: a node's record and view (`nodes`), an engine's series and view
(`engines`), the rank logs and NCCL tails (`logs`), the operations' runs and bench points (`runs`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

from cockpit.config import Inventory
from cockpit.errors import CockpitError
from cockpit.events import Finished, Planned
from cockpit.ops.op_records import OpRecord
from cockpit.plan import plan_lane
from cockpit.redact import shown
from cockpit.telemetry.boot import BootState
from cockpit.telemetry.slo import DEFAULT_SLO, Slo
from cockpit.tui.state.advisor import Onsets, engine_hints, node_hints
from cockpit.tui.state.engines import EngineRecord, bench_in_window, fold_scrape
from cockpit.tui.state.inputs import (
    EngineSampled,
    NodeLost,
    NodeSampled,
    OpEnded,
    OpUpdate,
    RankLines,
    RankOnNode,
    StoreInput,
)
from cockpit.tui.state.lanes import ENGINE_FRESH_S, Observed, observed, overlaid
from cockpit.tui.state.logs import LOG_LINES, NCCL_LINES, LaneNccl, RankLog, append_lines
from cockpit.tui.state.nodes import AGE_STEP_S, DOWN_AFTER_S, NodeRecord, node_due, node_view
from cockpit.tui.state.parts import ALL, LISTED, Part
from cockpit.tui.state.runs import BENCH_EVENTS, Runs
from cockpit.tui.state.views import (
    BenchRow,
    FleetSnapshot,
    Hint,
    LanePhase,
    LaneView,
    LogEntry,
    LogSource,
    NodeHealth,
    RankNccl,
    lane_key,
)

__all__ = ["DOWN_AFTER_S", "LOG_LINES", "NCCL_LINES", "Store"]

HINTS_KEPT = 16
FOLLOWED_KEPT = 4  # other cockpits' benches whose points stay shown


class Store:
    """Reduces inputs into per-node, per-lane, per-rank state; `snapshot()` freezes it."""

    def __init__(
        self,
        inventory: Inventory,
        baselines: Mapping[str, Mapping[tuple[int, int], float]] | None = None,
        slo: Slo = DEFAULT_SLO,
        headlines: Mapping[str, str] | None = None,
    ) -> None:
        """`baselines`: per lane, tg tokens/s of its reference report by (depth, concurrency);
        `slo`: what the engines' goodput counts against; `headlines`: lane key → its "last
        bench" before this session (`fleet_ops.report_headlines`)."""
        self.inventory = inventory
        self.baselines = dict(baselines or {})
        self.slo = slo
        self._advisor = Onsets()
        self._hints: deque[tuple[int, Hint]] = deque(maxlen=HINTS_KEPT)
        self._hint_seq = 0
        self._nodes: dict[str, NodeRecord] = {name: NodeRecord() for name in inventory.nodes}
        self._engines: dict[str, EngineRecord] = {}
        self._boot: dict[str, BootState] = {}  # lane key → its head's boot, as its log says
        self._logs: dict[LogSource, RankLog] = {}
        self._nccl: dict[str, LaneNccl] = {}
        self._runs = Runs(self.baselines, headlines)
        self._followed: dict[str, OpRecord] = {}  # other cockpits' benches, by record id
        self._was_running: set[str] = set()  # lane keys with a running container listed
        self._was_listed: set[str] = set()  # ... with any container listed
        self._seq = 0
        self.version = 0
        self.dirty: set[Part] = set()  # the parts changed since the screen last took them
        self.on_change: Callable[[], None] | None = None  # told after an input changed a part
        self._lanes = self._lane_slots()

    # ------------------------------------------------------------------ inputs

    def apply_all(self, inputs: Iterable[StoreInput]) -> None:
        for item in inputs:
            self.apply(item)

    def apply(self, item: StoreInput) -> frozenset[Part]:
        """Reduce one input; returns the parts of the snapshot it changed (also added to
        `dirty`, and `on_change` told)."""
        self.version += 1
        parts = self._reduce(item)
        if parts:
            self.dirty |= parts
            if self.on_change is not None:
                self.on_change()
        return parts

    def take_dirty(self) -> frozenset[Part]:
        """The parts changed since the last call."""
        parts, self.dirty = frozenset(self.dirty), set()
        return parts

    def _reduce(self, item: StoreInput) -> frozenset[Part]:
        match item:
            case NodeSampled():
                node = self._nodes.setdefault(item.node, NodeRecord())
                before, lost = node.last, node.lost
                node.last, node.lost, node.lost_since = item, None, None
                if item.gpu is not None and item.gpu.utilization_pct is not None:
                    node.util.append(item.gpu.utilization_pct)
                self._forget_gone_lanes()
                self._advise(item.node, node_hints(node_view(item.node, node, item.at)))
                same = before is not None and (before.ranks, before.ranks_known, before.images) == (
                    item.ranks, item.ranks_known, item.images
                )  # fmt: skip
                moved = (before.ops if before else ()) != item.ops  # other cockpits' operations
                others = {Part.OPS, Part.BENCH, Part.LANES} if moved else set()
                self._follow(item)
                if same and lost is None:
                    return frozenset({Part.NODES, *others})
                return LISTED | {Part.NODES, *others}
            case NodeLost():
                node = self._nodes.setdefault(item.node, NodeRecord())
                node.lost_since = node.lost_since if node.lost else item.at
                node.lost = item
                return frozenset({Part.NODES, Part.LANES})  # a DOWN node's lanes cannot tell
            case EngineSampled():
                return self._engine(item)
            case RankLines():
                return self._lines(item)
            case OpUpdate():
                planned = self._runs.update(item.run, item.event)
                if planned is not None:
                    self._new_run_of(planned)
                if isinstance(item.event, Planned | Finished):  # a run begins or ends
                    return ALL
                bench = {Part.BENCH} if isinstance(item.event, BENCH_EVENTS) else set()
                return frozenset({Part.OPS, Part.LANES, *bench})
            case OpEnded():
                self._runs.ended(item.run, item.why)
                return ALL
        return frozenset()

    def next_change(self, now: float) -> float | None:
        """When (wall clock) a view changes with no input coming, if it does: a node's age as
        shown, a live node turning STALE, an engine no longer answering (its lane
        UNRESPONSIVE, and for how long), a running operation's elapsed time."""
        due = [d for d in (node_due(node, now) for node in self._nodes.values()) if d is not None]
        present = self._present()
        for key, eng in self._engines.items():
            if key in present and eng.cur is not None:
                fresh_until = eng.cur.at + ENGINE_FRESH_S
                due.append(fresh_until if fresh_until >= now else now + AGE_STEP_S)
        if self._runs.running:
            due.append(now + AGE_STEP_S)
        return min(due, default=None)

    # ------------------------------------------------------------------ observation

    def _listed(self, running_only: bool) -> set[str]:
        """Lane keys with a container in some node's list (a running one, if asked)."""
        return {
            lane_key(r.lane, r.cluster)
            for node in self._nodes.values()
            if node.last is not None
            for r in node.last.ranks
            if r.running or not running_only
        }

    def _present(self) -> set[str]:
        """Lanes the live panes may show: a running container listed, or a launch bringing it
        up (its containers may not be listed yet)."""
        return self._listed(running_only=True) | self._runs.launching()

    def _forget_gone_lanes(self) -> None:
        """A lane whose running containers left the nodes' lists loses its engine history and
        NCCL; one with no container left at all, its boot state (an exited rank keeps its boot
        story)."""
        running, listed = self._listed(running_only=True), self._listed(running_only=False)
        for key in self._was_running - running:
            self._engines.pop(key, None)
            self._nccl.pop(key, None)
            self._advisor.forget(key)
        for key in self._was_listed - listed:
            self._boot.pop(key, None)
        self._was_running, self._was_listed = running, listed

    def _engine(self, item: EngineSampled) -> frozenset[Part]:
        """The lane's engine view from this scrape (`engines.fold_scrape`), with the advisor's
        hints for the lane."""
        key = lane_key(item.lane, item.cluster)
        if key not in self._present():
            return frozenset()  # a scrape that was in flight when the lane's containers went
        eng = self._engines.setdefault(key, EngineRecord())
        recipe = self.inventory.recipes.get(item.lane)
        boot = self._boot.get(key, BootState())
        benching = self._runs.benching(item.lane, item.cluster) or self._benched_by_others(
            item.lane, item.cluster
        )
        view = fold_scrape(eng, key, item.metrics, boot, recipe, self.slo, benching)
        serve = recipe.serve if recipe else None
        hints = engine_hints(view, serve, bench_in_window(eng, item.metrics.at))
        self._advise(key, hints)
        eng.view = replace(view, advice=hints)
        return frozenset({Part.ENGINES, Part.LANES})  # the lane serves while its engine answers

    def _follow(self, item: NodeSampled) -> None:
        """Keep the newest record of each bench of another cockpit that measured a point (its
        tail stays shown after the bench ended and its record went), the last few only."""
        for op in item.ops:
            record, known = op.record, self._followed.get(op.record.id)
            fresher = known is None or len(record.points) >= len(known.points)
            if record.op == "bench" and record.points and not op.stale() and fresher:
                self._followed[record.id] = record
        for old in sorted(self._followed.values(), key=lambda r: r.since)[:-FOLLOWED_KEPT]:
            del self._followed[old.id]

    def _benches_of_others(self) -> list[BenchRow]:
        """The points other cockpits' benches measured, as their records on the nodes carried
        them: a viewer follows a bench it did not start."""
        return [
            BenchRow(
                r.lane,
                r.cluster,
                p.depth,
                p.concurrency,
                p.tg_tps,
                p.pp_tps,
                self.baselines.get(r.lane, {}).get((p.depth, p.concurrency)),
            )
            for r in sorted(self._followed.values(), key=lambda r: r.since)
            for p in r.points
        ]

    def _benched_by_others(self, lane: str, cluster: str) -> bool:
        """Another cockpit's bench of the lane is in flight, as the nodes record it (a viewer
        that runs no bench must not advise on the bench's own fixed-length requests)."""
        return any(
            op.record.op == "bench"
            and (op.record.lane, op.record.cluster) == (lane, cluster)
            and not op.stale()
            for node in self._nodes.values()
            if node.last is not None
            for op in node.last.ops
        )

    def _advise(self, subject: str, hints: tuple[Hint, ...]) -> None:
        """Keep the hints whose condition just began for the screen to show (once each)."""
        for hint in self._advisor.update(subject, hints):
            self._hint_seq += 1
            self._hints.append((self._hint_seq, hint))

    def _lines(self, item: RankLines) -> frozenset[Part]:
        """Append a rank's lines (`logs.append_lines`). A fresh stream (a new container, or a
        re-followed one replaying its tail) starts the rank's log, and for the head the lane's
        boot state, over."""
        key = lane_key(item.lane, item.cluster)
        source = LogSource(key, item.node, item.rank)
        nccl = self._nccl.setdefault(key, LaneNccl())
        boot_was = self._boot.get(key)
        if item.fresh:
            self._logs.pop(source, None)
            nccl.ranks.pop((item.node, item.rank), None)
            if item.rank == 0:
                self._boot.pop(key, None)
        log = self._logs.setdefault(source, RankLog())
        boot = self._boot.get(key, BootState()) if item.rank == 0 else None
        boot, self._seq, saw_nccl = append_lines(item, log, nccl, boot, self._seq)
        if boot is not None:  # the failed line is shown in the Lanes pane: as every log line
            failed = boot.failed_line
            self._boot[key] = replace(boot, failed_line=shown(failed)) if failed else boot
        parts = {Part.LOGS}
        if saw_nccl or item.fresh:
            parts.add(Part.NCCL)
        if self._boot.get(key) != boot_was:
            parts.add(Part.LANES)
        return frozenset(parts)

    def _new_run_of(self, key: str) -> None:
        """A launch of the lane: what an earlier run left (logs of containers no longer listed,
        the NCCL tail and engine history of a lane not running) goes, so the panes show this
        run's. A lane that runs (a launch about to be refused) keeps everything."""
        if key not in self._listed(running_only=True):
            self._nccl.pop(key, None)
            self._engines.pop(key, None)
            self._advisor.forget(key)
        live = {
            (name, r.rank)
            for name, node in self._nodes.items()
            if node.last is not None
            for r in node.last.ranks
            if lane_key(r.lane, r.cluster) == key
        }
        for source in [s for s in self._logs if s.lane == key and (s.node, s.rank) not in live]:
            del self._logs[source]

    # ------------------------------------------------------------------ snapshot

    def snapshot(self, now: float) -> FleetSnapshot:
        """Freeze the current state; `now` (wall clock) ages the node and engine samples."""
        nodes = tuple(node_view(name, node, now) for name, node in self._nodes.items())
        health = {n.name: n.health for n in nodes}
        logs: dict[LogSource, tuple[LogEntry, ...]] = {
            source: log.entries() for source, log in self._logs.items()
        }
        running = self._present()
        others = tuple(self._benches_of_others())
        return FleetSnapshot(
            at=now,
            nodes=nodes,
            lanes=tuple(self._lane_view(*slot, health, now, others) for slot in self._lanes),
            engines={
                k: e.view for k, e in self._engines.items() if e.view is not None and k in running
            },
            nccl={k: tuple(n.tail) for k, n in self._nccl.items() if k in running},
            nccl_ranks={
                k: tuple(
                    RankNccl(node, rank, transport)
                    for (node, rank), tracker in sorted(n.ranks.items(), key=lambda i: i[0][1])
                    for transport in tracker.summaries()
                )
                for k, n in self._nccl.items()
                if k in running
            },
            logs=logs,
            dropped={source: log.dropped for source, log in self._logs.items() if log.dropped},
            access={source: log.access for source, log in self._logs.items() if log.access},
            ops=self._runs.ops(),
            bench=(*self._runs.bench, *others),
            version=self.version,
            log_sources=tuple(sorted(self._logs)),
            live_sources=frozenset(
                LogSource(lane_key(r.lane, r.cluster), name, r.rank)
                for name, node in self._nodes.items()
                if node.last is not None
                for r in node.last.ranks
                if r.running
            ),
            hints=tuple(self._hints),
            boots=dict(self._boot),
        )

    def _lane_slots(self) -> list[tuple[str, str, tuple[str, ...], str | None]]:
        slots = []
        for recipe in self.inventory.recipes.values():
            for cluster_name in recipe.lane.clusters:
                cluster = self.inventory.clusters.get(cluster_name)
                if cluster is None:
                    continue
                try:
                    endpoint: str | None = plan_lane(self.inventory, recipe, cluster).endpoint
                except CockpitError:
                    endpoint = None
                slots.append((recipe.name, cluster_name, tuple(cluster.nodes), endpoint))
        return slots

    def _observe(
        self, lane: str, cluster: str, nodes: tuple[str, ...], health: dict[str, NodeHealth],
        now: float,
    ) -> Observed:  # fmt: skip
        """What the lane's nodes say now: its containers where known, and which nodes cannot
        tell (DOWN, or not heard from: no sample or no container list yet, as when the cockpit
        opens; a STALE node's last list still stands)."""
        ranks: list[tuple[str, RankOnNode]] = []
        unknown: list[str] = []
        for name in nodes:
            node = self._nodes.get(name)
            last = node.last if node is not None else None
            if last is None or not last.ranks_known or health.get(name) is NodeHealth.DOWN:
                unknown.append(name)
                continue
            ranks += [(name, r) for r in last.ranks if (r.lane, r.cluster) == (lane, cluster)]
        key = lane_key(lane, cluster)
        engine = self._engines.get(key)
        return Observed(
            expected=len(nodes),
            ranks=tuple(ranks),
            unknown=tuple(unknown),
            head_unknown=bool(nodes) and nodes[0] in unknown,
            down=frozenset(n for n in unknown if health.get(n) is NodeHealth.DOWN),
            boot=self._boot.get(key),
            engine_age_s=now - engine.cur.at if engine and engine.cur else None,
        )

    def _lane_view(
        self, lane: str, cluster: str, nodes: tuple[str, ...], endpoint: str | None,
        health: dict[str, NodeHealth], now: float, others: tuple[BenchRow, ...] = (),
    ) -> LaneView:  # fmt: skip
        base = LaneView(
            lane,
            cluster,
            nodes,
            LanePhase.STOPPED,
            endpoint=endpoint,
            image_ok=self._image_ok(lane, nodes),
            bench_headline=self._runs.bench_headline(lane, cluster, others),
        )
        view = observed(base, self._observe(lane, cluster, nodes, health, now))
        running = [  # an op without a cluster (stop by lane) concerns the lane wherever it runs
            op
            for op in self._runs.running.values()
            if op.lane == lane and op.cluster in (cluster, "")
        ]
        return overlaid(view, running[-1] if running else None)

    def _image_ok(self, lane: str, nodes: tuple[str, ...]) -> bool | None:
        ref = self.inventory.recipes[lane].image.ref
        seen = [self._nodes[n].last for n in nodes if n in self._nodes]
        known = [s.images for s in seen if s is not None and s.images is not None]
        if len(known) < len(nodes):
            return None
        return all(ref in images for images in known)
