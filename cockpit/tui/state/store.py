"""The one state store: facts in (typed inputs), immutable snapshots out.

Only the Textual event loop touches a `Store`; pollers and operations reach it through messages.
Every buffer is bounded (deque maxlen), so a cockpit left open for weeks uses the same memory as
one opened a minute ago.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from cockpit.bench.events import BenchWarning, PointFinished, PointStarted
from cockpit.bench.models import depth_label
from cockpit.config import Inventory
from cockpit.errors import CockpitError
from cockpit.ops.events import (
    Finished,
    Notice,
    OpEvent,
    Planned,
    Progress,
    StepFinished,
    StepStarted,
)
from cockpit.plan import plan_lane
from cockpit.redact import shown
from cockpit.telemetry.boot import BootPhase, BootState, advance
from cockpit.telemetry.metrics import EngineMetrics, kv_pool_gib, window
from cockpit.telemetry.nccl_log import TransportTracker
from cockpit.tui.state.inputs import (
    EngineSampled,
    NodeLost,
    NodeSampled,
    RankLines,
    RankOnNode,
    StoreInput,
)
from cockpit.tui.state.stall import is_decode_stall
from cockpit.tui.state.views import (
    BenchRow,
    EngineView,
    FleetSnapshot,
    LanePhase,
    LaneView,
    LogEntry,
    NodeHealth,
    NodeView,
    OpView,
    lane_key,
)

HISTORY = 120  # samples kept per series (about 2-6 minutes at the poll rates used)
LOG_LINES = 5000  # per rank
NCCL_LINES = 2000  # merged, all ranks
NCCL_SEEN = 512
OPS_KEPT = 12
BENCH_POINTS = 64
STALE_AFTER_S = 10.0
_OPS_ON_NODES = {"launch", "stop", "sync", "switch"}
_BOOT_DONE = (BootPhase.READY,)  # after a failure, a more decisive line may still come


def _level(raw: str) -> str | None:
    """The line's severity by substring (vLLM `ERROR`/`WARNING`, NCCL `WARN`); None: info/other."""
    if "ERROR" in raw or "Traceback" in raw:
        return "ERROR"
    if "WARN" in raw:
        return "WARNING"
    return None


@dataclass
class _Node:
    last: NodeSampled | None = None
    lost: NodeLost | None = None
    util: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))


@dataclass
class _Engine:
    prev: EngineMetrics | None = None
    cur: EngineMetrics | None = None
    kv: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    gen: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    prompt: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    busy_gen: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    view: EngineView | None = None


@dataclass
class _Log:
    lines: deque[LogEntry] = field(default_factory=lambda: deque(maxlen=LOG_LINES))
    dropped: int = 0
    frozen: tuple[LogEntry, ...] = ()
    frozen_seq: int = -1


class Store:
    """Reduces inputs into per-node, per-lane, per-rank state; `snapshot()` freezes it."""

    def __init__(
        self,
        inventory: Inventory,
        baselines: Mapping[str, Mapping[tuple[int, int], float]] | None = None,
    ) -> None:
        """`baselines`: per lane, tg tokens/s of its reference report by (depth, concurrency)."""
        self.inventory = inventory
        self.baselines = dict(baselines or {})
        self._nodes: dict[str, _Node] = {name: _Node() for name in inventory.nodes}
        self._engines: dict[str, _Engine] = {}
        self._boot: dict[str, BootState] = {}  # lane key → head rank's boot state
        self._logs: dict[tuple[str, int], _Log] = {}
        self._nccl: deque[LogEntry] = deque(maxlen=NCCL_LINES)
        self._transport = TransportTracker()
        self._nccl_seen: dict[str, None] = {}  # recent NCCL INFO lines (insertion-ordered LRU)
        self._ops: dict[tuple[str, str, str], OpView] = {}
        self._done_ops: deque[OpView] = deque(maxlen=OPS_KEPT)
        self._bench: deque[BenchRow] = deque(maxlen=BENCH_POINTS)
        self._seq = 0
        self.version = 0
        self._lanes = self._lane_slots()

    # ------------------------------------------------------------------ inputs

    def apply_all(self, inputs: Iterable[StoreInput]) -> None:
        for item in inputs:
            self.apply(item)

    def apply(self, item: StoreInput) -> None:
        self.version += 1
        match item:
            case NodeSampled():
                node = self._nodes.setdefault(item.node, _Node())
                node.last, node.lost = item, None
                if item.gpu is not None and item.gpu.utilization_pct is not None:
                    node.util.append(item.gpu.utilization_pct)
            case NodeLost():
                self._nodes.setdefault(item.node, _Node()).lost = item
            case EngineSampled():
                self._engine(item)
            case RankLines():
                self._lines(item)
            case PointFinished():
                self._bench_point(item)
                self._op(item)
            case OpEvent():
                self._op(item)

    def _engine(self, item: EngineSampled) -> None:
        key = lane_key(item.lane, item.cluster)
        eng = self._engines.setdefault(key, _Engine())
        eng.prev, eng.cur = eng.cur, item.metrics
        m = item.metrics
        win = window(eng.prev, m) if eng.prev is not None else None
        gen = win.generation_tps if win else None
        stalled = False
        if gen is not None:
            stalled = is_decode_stall(tuple(eng.busy_gen), gen, m.requests_running)
            eng.gen.append(gen)
            if m.requests_running:
                eng.busy_gen.append(gen)
        if win and win.prompt_tps is not None:
            eng.prompt.append(win.prompt_tps)
        if m.kv_cache_usage is not None:
            eng.kv.append(m.kv_cache_usage)
        ttft = win.ttft if win else None
        boot = self._boot.get(key, BootState())  # the boot log: pool sizes /metrics may lack
        recipe = self.inventory.recipes.get(item.lane)
        pool_gib = kv_pool_gib(m, recipe.model.kv_bytes_per_token if recipe else None)
        eng.view = EngineView(
            lane_key=key,
            at=m.at,
            running=m.requests_running,
            waiting=m.requests_waiting,
            kv_usage=m.kv_cache_usage,
            pool_tokens=m.pool_tokens or boot.kv_pool_tokens,
            pool_gib=pool_gib if pool_gib is not None else boot.kv_cache_gib,
            prefix_hit_rate=win.prefix_hit_rate if win else None,
            preemptions_total=m.preemptions,
            prompt_tps=win.prompt_tps if win else None,
            gen_tps=gen,
            ttft_p50=ttft.p50 if ttft else None,
            ttft_p95=ttft.p95 if ttft else None,
            spec_acceptance=win.spec_acceptance_rate if win else None,
            kv_history=tuple(eng.kv),
            gen_history=tuple(eng.gen),
            prompt_history=tuple(eng.prompt),
            stalled=stalled,
        )

    def _lines(self, item: RankLines) -> None:
        """Append a rank's lines; NCCL lines also go to the merged tail and the transport summary.

        Per line this is a few substring tests plus the tracker's parse of NCCL lines: a flood of
        tens of thousands of lines a second must not starve the event loop.
        """
        key = lane_key(item.lane, item.cluster)
        log = self._logs.setdefault((item.node, item.rank), _Log())
        log.dropped += item.dropped
        boot = self._boot.get(key, BootState()) if item.rank == 0 else None
        seen = self._nccl_seen
        for raw in item.lines:
            self._seq += 1
            level = _level(raw)
            entry = LogEntry(self._seq, item.node, item.rank, shown(raw), level)
            if "NCCL " in raw:
                self._nccl.append(entry)
                if level is not None or raw not in seen:  # a repeated INFO line adds nothing
                    self._transport.feed(raw)
                    seen[raw] = None
                    if len(seen) > NCCL_SEEN:
                        del seen[next(iter(seen))]
            log.lines.append(entry)
            if boot is not None and boot.phase not in _BOOT_DONE:
                boot = advance(boot, raw)
        if boot is not None:  # the failed line is shown in the Lanes pane: as every log line
            failed = boot.failed_line
            self._boot[key] = replace(boot, failed_line=shown(failed)) if failed else boot

    def _bench_point(self, event: PointFinished) -> None:
        spec = event.result.spec
        base = self.baselines.get(event.lane, {}).get((spec.depth, spec.concurrency))
        self._bench.append(
            BenchRow(
                lane=event.lane,
                cluster=event.cluster,
                depth=spec.depth,
                concurrency=spec.concurrency,
                tg_tps=event.result.tg,
                pp_tps=event.result.pp,
                baseline_tg_tps=base,
                flags=tuple(f.kind.value for f in event.result.flags),
            )
        )

    def _op(self, event: OpEvent) -> None:
        key = (event.op, event.lane, event.cluster)
        current = self._ops.get(key)
        if isinstance(event, Planned):
            self._ops[key] = OpView(
                event.op, event.lane, event.cluster, event.ts, event.steps, message=event.summary
            )
            if event.op in ("launch", "switch"):
                self._boot.pop(lane_key(event.lane, event.cluster), None)
            return
        if current is None:  # an event that names less (no cluster): the running op it belongs to
            key = next((k for k in self._ops if k[0] == event.op and event.lane in ("", k[1])), key)
            current = self._ops.get(key) or OpView(
                event.op, event.lane, event.cluster, event.ts, ()
            )
        match event:
            case StepStarted():
                where = f" on {event.node}" if event.node else ""
                current = replace(current, current=event.step + where, fraction=None, message="")
            case StepFinished(ok=False):
                current = replace(
                    current, notices=(*current.notices, f"{event.step}: {event.detail}")[-5:]
                )
            case Progress():
                current = replace(
                    current,
                    current=event.step,
                    fraction=event.fraction,
                    eta_s=event.eta_s,
                    message=event.message,
                )
            case PointStarted():
                current = replace(
                    current, current=event.point.label, fraction=event.index / max(event.total, 1)
                )
            case BenchWarning() | Notice():
                current = replace(current, notices=(*current.notices, event.message)[-5:])
            case Finished():
                self._ops.pop(key, None)
                self._done_ops.appendleft(
                    replace(
                        current,
                        ok=event.ok,
                        summary=event.summary,
                        fraction=1.0 if event.ok else current.fraction,
                    )
                )
                return
        self._ops[key] = current

    # ------------------------------------------------------------------ snapshot

    def snapshot(self, now: float) -> FleetSnapshot:
        """Freeze the current state; `now` (wall clock) only ages the node samples."""
        nodes = tuple(self._node_view(name, node, now) for name, node in self._nodes.items())
        logs: dict[tuple[str, int], tuple[LogEntry, ...]] = {}
        for source, log in self._logs.items():
            last = log.lines[-1].seq if log.lines else -1
            if last != log.frozen_seq:
                log.frozen, log.frozen_seq = tuple(log.lines), last
            logs[source] = log.frozen
        return FleetSnapshot(
            at=now,
            nodes=nodes,
            lanes=tuple(self._lane_view(*slot) for slot in self._lanes),
            engines={k: e.view for k, e in self._engines.items() if e.view is not None},
            nccl=tuple(self._nccl),
            nccl_ranks=self._transport.summaries(),
            logs=logs,
            dropped={source: log.dropped for source, log in self._logs.items() if log.dropped},
            ops=(*self._ops.values(), *self._done_ops),
            bench=tuple(self._bench),
            version=self.version,
            log_sources=tuple(sorted(self._logs)),
        )

    def _node_view(self, name: str, node: _Node, now: float) -> NodeView:
        last, lost = node.last, node.lost
        age = now - last.at if last else None
        if lost is not None:
            health = NodeHealth.STALE if last else NodeHealth.DOWN
        elif last is None:
            health = NodeHealth.WAITING
        else:
            health = (
                NodeHealth.STALE if age is not None and age > STALE_AFTER_S else NodeHealth.LIVE
            )
        return NodeView(
            name=name,
            health=health,
            age_s=age,
            error=lost.error if lost else None,
            gpu=last.gpu if last else None,
            memory=last.memory if last else None,
            ranks=last.ranks if last else (),
            util_history=tuple(node.util),
            retry_in_s=lost.retry_in_s if lost else None,
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

    def _ranks_of(self, lane: str, cluster: str) -> list[RankOnNode]:
        return [
            r
            for n in self._nodes.values()
            if n.last is not None
            for r in n.last.ranks
            if r.lane == lane and r.cluster == cluster
        ]

    def _lane_view(
        self, lane: str, cluster: str, nodes: tuple[str, ...], endpoint: str | None
    ) -> LaneView:
        key = lane_key(lane, cluster)
        base = LaneView(
            lane,
            cluster,
            nodes,
            LanePhase.STOPPED,
            endpoint=endpoint,
            image_ok=self._image_ok(lane, nodes),
            bench_headline=self._bench_headline(lane, cluster),
        )
        running = [  # an op without a cluster (stop by lane) concerns the lane wherever it runs
            op for (_, ln, cl), op in self._ops.items() if ln == lane and cl in (cluster, "")
        ]
        ranks = self._ranks_of(lane, cluster)
        boot = self._boot.get(key)
        if running:
            op = running[-1]
            if op.op == "sync":
                pct = op.fraction * 100 if op.fraction is not None else None
                return replace(
                    base, phase=LanePhase.SYNCING, percent=pct, step=op.current, eta_s=op.eta_s
                )
            if op.op == "stop":
                return replace(base, phase=LanePhase.STOPPING, step=op.current)
            if op.op in ("launch", "switch") and not (boot and boot.ready):
                return self._booting(base, boot, op)
        if ranks:
            if any(not r.running for r in ranks):
                return replace(base, phase=LanePhase.FAILED, detail="a rank's container exited")
            if boot is None:
                return replace(base, phase=LanePhase.BOOTING, step="starting")
            if boot.ready:
                return replace(base, phase=LanePhase.SERVING)
            if boot.failed:
                return replace(
                    base, phase=LanePhase.FAILED, detail=boot.failed_line or "boot failed"
                )
            return self._booting(base, boot, None)
        failed = next(
            (op for op in self._done_ops if op.lane == lane and op.cluster == cluster), None
        )
        if failed is not None and failed.ok is False and failed.op in _OPS_ON_NODES:
            return replace(base, phase=LanePhase.FAILED, detail=failed.summary)
        return base

    @staticmethod
    def _booting(base: LaneView, boot: BootState | None, op: OpView | None) -> LaneView:
        eta = op.eta_s if op else None
        if boot is None or boot.phase is BootPhase.STARTING:
            step = op.current if op and op.current else "starting"
            pct = op.fraction * 100 if op and op.fraction is not None else None
            return replace(base, phase=LanePhase.BOOTING, step=step, percent=pct, eta_s=eta)
        if boot.failed:
            return replace(base, phase=LanePhase.FAILED, detail=boot.failed_line or "boot failed")
        return replace(
            base, phase=LanePhase.BOOTING, step=boot.phase.value, percent=boot.percent, eta_s=eta
        )

    def _image_ok(self, lane: str, nodes: tuple[str, ...]) -> bool | None:
        ref = self.inventory.recipes[lane].image.ref
        seen = [self._nodes[n].last for n in nodes if n in self._nodes]
        known = [s.images for s in seen if s is not None and s.images is not None]
        if len(known) < len(nodes):
            return None
        return all(ref in images for images in known)

    def _bench_headline(self, lane: str, cluster: str) -> str | None:
        points = [
            p
            for p in self._bench
            if (p.lane, p.cluster) == (lane, cluster) and p.tg_tps is not None
        ]
        if not points:
            return None
        p = points[-1]
        return f"tg {p.tg_tps:.1f} t/s @{depth_label(p.depth)} c{p.concurrency}"
