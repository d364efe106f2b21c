"""The one state store: facts in (typed inputs), immutable snapshots out.

Only the Textual event loop touches a `Store`; pollers and operations reach it through messages.
Every buffer is bounded (deque maxlen), so a cockpit left open for weeks uses the same memory as
one opened a minute ago.

What the nodes report is the state (`cockpit.tui.state.lanes`); an operation is kept per run (the
worker that runs it) only while it runs, and whatever its events name (a switch's nested sync
says op "sync"), they belong to that run. Engine views, NCCL transports and boot states exist for
lanes whose containers the nodes list, and go with them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from cockpit.bench.events import BenchWarning, PointFinished, PointStarted, SweepPlanned
from cockpit.bench.models import SweepPlan, depth_label
from cockpit.config import Inventory
from cockpit.errors import EXIT_REFUSED, CockpitError
from cockpit.events import (
    Finished,
    Notice,
    OpEvent,
    Planned,
    Progress,
    Severity,
    StepFinished,
    StepStarted,
)
from cockpit.plan import plan_lane
from cockpit.redact import shown
from cockpit.telemetry.boot import BootPhase, BootState, advance
from cockpit.telemetry.docker_out import split_time
from cockpit.telemetry.metrics import EngineMetrics, kv_pool_gib, window
from cockpit.telemetry.nccl_transport import TransportTracker
from cockpit.telemetry.severity import severity
from cockpit.telemetry.slo import DEFAULT_SLO, Slo, goodput
from cockpit.telemetry.vllm_log import routine_access
from cockpit.tui.state.advisor import Onsets, engine_hints, node_hints
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
from cockpit.tui.state.lanes import Observed, observed, overlaid
from cockpit.tui.state.stall import is_decode_stall
from cockpit.tui.state.views import (
    BenchRow,
    EngineView,
    FleetSnapshot,
    Hint,
    LanePhase,
    LaneView,
    LogEntry,
    LogSource,
    NodeHealth,
    NodeView,
    OpView,
    RankNccl,
    lane_key,
)

HISTORY = 120  # samples kept per series (about 2-6 minutes at the poll rates used)
WINDOW_S = 60.0
"""Latency quantiles, finish reasons, goodput and recent preemptions cover this much of the past:
a 2 s scrape window often holds no finished request at all."""
WINDOW_SCRAPES = 64  # kept per engine for that window (fewer when scraped faster than 1 s)
HINTS_KEPT = 16
LOG_LINES = 5000  # per rank
NCCL_LINES = 2000  # merged, per lane
NCCL_SEEN = 512
OPS_KEPT = 12
BENCH_POINTS = 64
STALE_AFTER_S = 10.0
DOWN_AFTER_S = 30.0
"""A node whose probe keeps failing this long is DOWN even while its link still connects."""
_BOOT_DONE = (BootPhase.READY,)  # after a failure, a more decisive line may still come


@dataclass
class _Node:
    last: NodeSampled | None = None
    lost: NodeLost | None = None
    lost_since: float | None = None  # when the current run of failed polls began
    util: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))


@dataclass
class _Engine:
    prev: EngineMetrics | None = None
    cur: EngineMetrics | None = None
    kv: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    gen: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    prompt: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    busy_gen: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    recent: deque[EngineMetrics] = field(default_factory=lambda: deque(maxlen=WINDOW_SCRAPES))
    backlog_since: float | None = None  # since when more requests wait than run
    bench_at: float | None = None  # the last scrape while a bench of the lane ran
    view: EngineView | None = None


@dataclass
class _Log:
    lines: deque[LogEntry] = field(default_factory=lambda: deque(maxlen=LOG_LINES))
    dropped: int = 0
    access: int = 0  # routine access lines among `lines`
    frozen: tuple[LogEntry, ...] = ()
    frozen_seq: int = -1


@dataclass
class _Nccl:
    """One lane's NCCL lines: the merged tail and a transport summary per rank's stream."""

    tail: deque[LogEntry] = field(default_factory=lambda: deque(maxlen=NCCL_LINES))
    ranks: dict[tuple[str, int], TransportTracker] = field(default_factory=dict)
    seen: dict[str, None] = field(default_factory=dict)  # recent INFO lines (ordered LRU)


def bench_mode(cold: bool, driver: str) -> str:
    """What a bench point measured, named when it is not what the Bench pane's baselines measure
    (the built-in driver's warm sweep): `COLD`, `llama-benchy`, or both; "" when it is."""
    return " · ".join((["COLD"] if cold else []) + ([driver] if driver != "builtin" else []))


class Store:
    """Reduces inputs into per-node, per-lane, per-rank state; `snapshot()` freezes it."""

    def __init__(
        self,
        inventory: Inventory,
        baselines: Mapping[str, Mapping[tuple[int, int], float]] | None = None,
        slo: Slo = DEFAULT_SLO,
    ) -> None:
        """`baselines`: per lane, tg tokens/s of its reference report by (depth, concurrency);
        `slo`: what the engines' goodput counts against."""
        self.inventory = inventory
        self.baselines = dict(baselines or {})
        self.slo = slo
        self._advisor = Onsets()
        self._hints: deque[tuple[int, Hint]] = deque(maxlen=HINTS_KEPT)
        self._hint_seq = 0
        self._nodes: dict[str, _Node] = {name: _Node() for name in inventory.nodes}
        self._engines: dict[str, _Engine] = {}
        self._boot: dict[str, BootState] = {}  # lane key → its head's boot, as its log says
        self._logs: dict[LogSource, _Log] = {}
        self._nccl: dict[str, _Nccl] = {}
        self._running: dict[int, OpView] = {}
        self._done_ops: deque[OpView] = deque(maxlen=OPS_KEPT)
        self._bench: deque[BenchRow] = deque(maxlen=BENCH_POINTS)
        self._sweeps: dict[int, SweepPlan] = {}  # a running bench's plan, by run
        self._was_running: set[str] = set()  # lane keys with a running container listed
        self._was_listed: set[str] = set()  # ... with any container listed
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
                node.last, node.lost, node.lost_since = item, None, None
                if item.gpu is not None and item.gpu.utilization_pct is not None:
                    node.util.append(item.gpu.utilization_pct)
                self._forget_gone_lanes()
                self._advise(item.node, node_hints(self._node_view(item.node, node, item.at)))
            case NodeLost():
                node = self._nodes.setdefault(item.node, _Node())
                node.lost_since = node.lost_since if node.lost else item.at
                node.lost = item
            case EngineSampled():
                self._engine(item)
            case RankLines():
                self._lines(item)
            case OpUpdate():
                if isinstance(item.event, SweepPlanned):
                    self._sweeps[item.run] = item.event.plan
                if isinstance(item.event, PointFinished):
                    self._bench_point(item.run, item.event)
                self._op(item.run, item.event)
            case OpEnded():
                self._sweeps.pop(item.run, None)
                self._ended(item)

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
        launching = {
            lane_key(op.lane, op.cluster)
            for op in self._running.values()
            if op.op in ("launch", "switch")
        }
        return self._listed(running_only=True) | launching

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

    def _engine(self, item: EngineSampled) -> None:
        """Rates from the last two scrapes; quantiles, finish reasons, goodput and preemptions
        over the scrapes of the last WINDOW_S; the advisor's hints for the lane."""
        key = lane_key(item.lane, item.cluster)
        if key not in self._present():
            return  # a scrape that was in flight when the lane's containers went
        eng = self._engines.setdefault(key, _Engine())
        eng.prev, eng.cur = eng.cur, item.metrics
        m = item.metrics
        win = window(eng.prev, m) if eng.prev is not None else None
        eng.recent.append(m)
        while eng.recent[0].at < m.at - WINDOW_S:
            eng.recent.popleft()
        first = eng.recent[0]
        span = window(first, m) if first is not m else None
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
        backlog = (m.requests_waiting or 0.0) > (m.requests_running or 0.0)
        if not backlog:
            eng.backlog_since = None
        elif eng.backlog_since is None:
            eng.backlog_since = m.at
        lane = (item.lane, item.cluster)
        if any(op.op == "bench" and (op.lane, op.cluster) == lane for op in self._running.values()):
            eng.bench_at = m.at
        boot = self._boot.get(key, BootState())  # the boot log: pool sizes /metrics may lack
        recipe = self.inventory.recipes.get(item.lane)
        pool_gib = kv_pool_gib(m, recipe.model.kv_bytes_per_token if recipe else None)
        reasons = span.finish_reasons.items() if span else ()
        finished = tuple(sorted(((r, n) for r, n in reasons if n > 0), key=lambda rn: -rn[1]))
        view = EngineView(
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
            spec_acceptance=win.spec_acceptance_rate if win else None,
            kv_history=tuple(eng.kv),
            gen_history=tuple(eng.gen),
            prompt_history=tuple(eng.prompt),
            stalled=stalled,
            window_s=span.seconds if span else None,
            ttft=span.ttft if span else None,
            tpot=span.tpot if span else None,
            itl=span.itl if span else None,
            queue=span.queue if span else None,
            prefill=span.prefill if span else None,
            decode=span.decode if span else None,
            e2e=span.e2e if span else None,
            finished=finished,
            finished_per_s=span.requests_per_s if span else None,
            goodput=goodput(first, m, self.slo) if span else None,
            slo=self.slo,
            preemptions_recent=span.preemptions if span else None,
            backlog_s=m.at - eng.backlog_since if eng.backlog_since is not None else None,
            prefix_caching=m.prefix_caching,
        )
        bench_in_window = eng.bench_at is not None and m.at - eng.bench_at <= WINDOW_S
        hints = engine_hints(view, recipe.serve if recipe else None, bench_in_window)
        self._advise(key, hints)
        eng.view = replace(view, advice=hints)

    def _advise(self, subject: str, hints: tuple[Hint, ...]) -> None:
        """Keep the hints whose condition just began for the screen to show (once each)."""
        for hint in self._advisor.update(subject, hints):
            self._hint_seq += 1
            self._hints.append((self._hint_seq, hint))

    def _lines(self, item: RankLines) -> None:
        """Append a rank's lines; NCCL lines also go to the lane's merged tail and its ranks'
        transport summaries. A fresh stream (a new container, or a re-followed one replaying
        its tail) starts the rank's log, and for the head the lane's boot state, over.

        Per line this is a few substring tests (`severity` parses only a line holding a level
        word) plus the tracker's parse of NCCL lines: a flood of tens of thousands of lines a
        second must not starve the event loop.
        """
        key = lane_key(item.lane, item.cluster)
        source = LogSource(key, item.node, item.rank)
        nccl = self._nccl.setdefault(key, _Nccl())
        if item.fresh:
            self._logs.pop(source, None)
            nccl.ranks.pop((item.node, item.rank), None)
            if item.rank == 0:
                self._boot.pop(key, None)
        log = self._logs.setdefault(source, _Log())
        log.dropped += item.dropped
        boot = self._boot.get(key, BootState()) if item.rank == 0 else None
        seen = nccl.seen
        tracker: TransportTracker | None = None
        lines = log.lines
        for raw in item.lines:
            self._seq += 1
            ts, text = split_time(raw)
            level = severity(text)
            access = level is None and routine_access(text)
            entry = LogEntry(self._seq, item.node, item.rank, shown(text), level, ts, access)
            if "NCCL " in text:
                nccl.tail.append(entry)
                if level is not None or text not in seen:  # a repeated INFO line adds nothing
                    if tracker is None:
                        tracker = nccl.ranks.setdefault((item.node, item.rank), TransportTracker())
                    tracker.feed(text)
                    seen[text] = None
                    if len(seen) > NCCL_SEEN:
                        del seen[next(iter(seen))]
            if len(lines) == LOG_LINES and lines[0].access:  # about to fall off the buffer
                log.access -= 1
            lines.append(entry)
            log.access += access
            if boot is not None and boot.phase not in _BOOT_DONE:
                boot = advance(boot, text)
        if boot is not None:  # the failed line is shown in the Lanes pane: as every log line
            failed = boot.failed_line
            self._boot[key] = replace(boot, failed_line=shown(failed)) if failed else boot

    def _bench_point(self, run: int, event: PointFinished) -> None:
        """A finished point; its Δ only against a baseline that measured the same (the pane's are
        warm built-in sweeps: a cold point against one reads the seed's artifact as −48 %)."""
        spec = event.result.spec
        sweep = self._sweeps.get(run)
        mode = bench_mode(spec.cold, sweep.driver if sweep else "builtin")
        base = (
            None if mode else self.baselines.get(event.lane, {}).get((spec.depth, spec.concurrency))
        )
        tg = event.result.inference.tg if event.result.inference else None
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
                tg_std=tg.std if tg else None,
                runs=len(tg.values) if tg else 0,
                mode=mode,
            )
        )

    # ------------------------------------------------------------------ operations

    def _op(self, run: int, event: OpEvent) -> None:
        """Fold one event into its run's view; a sub-operation's events (the sync a launch or a
        switch runs) show as steps of the run, and only the run's own Finished ends it."""
        current = self._running.get(run)
        if current is None:
            steps = event.steps if isinstance(event, Planned) else ()
            message = event.summary if isinstance(event, Planned) else ""
            current = OpView(
                event.op, event.lane, event.cluster, event.ts, steps, message=message, run=run
            )
            if isinstance(event, Planned):
                self._running[run] = current
                if event.op in ("launch", "switch"):
                    self._new_run_of(lane_key(event.lane, event.cluster))
                return
        sub = "" if event.op == current.op else event.op
        match event:
            case StepStarted():
                where = f" on {event.node}" if event.node else ""
                label = f"{sub} {event.step}" if sub else event.step
                current = replace(
                    current, current=label + where, step=event.step, sub=sub, fraction=None,
                    message="",
                )  # fmt: skip
            case StepFinished(ok=False):
                current = replace(
                    current, notices=(*current.notices, f"{event.step}: {event.detail}")[-5:]
                )
            case Progress():
                current = replace(
                    current,
                    current=f"{sub} {event.step}" if sub else event.step,
                    step=event.step,
                    sub=sub,
                    fraction=event.fraction,
                    eta_s=event.eta_s,
                    message=event.message,
                )
            case PointStarted():
                current = replace(
                    current, current=event.point.label, fraction=event.index / max(event.total, 1)
                )
            case BenchWarning():
                current = replace(current, notices=(*current.notices, event.message)[-5:])
            case Notice():
                node = event.node if event.severity is Severity.ERROR and event.node else None
                current = replace(
                    current,
                    notices=(*current.notices, event.message)[-5:],
                    node=(node or "").split(",")[0] or current.node,
                )
            case Finished() if not sub:
                self._running.pop(run, None)
                # a refusal changes nothing on screen but its notice
                if event.exit_code != EXIT_REFUSED:
                    self._done_ops.appendleft(
                        replace(
                            current,
                            ok=event.ok,
                            summary=event.summary,
                            exit_code=event.exit_code,
                            fraction=1.0 if event.ok else current.fraction,
                        )
                    )
                return
            case Finished(ok=False):
                current = replace(current, notices=(*current.notices, event.summary)[-5:])
        self._running[run] = current

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

    def _ended(self, item: OpEnded) -> None:
        """The run's worker is gone: without its Finished, it ended the way `why` says."""
        current = self._running.pop(item.run, None)
        if current is not None:
            self._done_ops.appendleft(replace(current, ok=False, summary=item.why))

    # ------------------------------------------------------------------ snapshot

    def snapshot(self, now: float) -> FleetSnapshot:
        """Freeze the current state; `now` (wall clock) ages the node and engine samples."""
        nodes = tuple(self._node_view(name, node, now) for name, node in self._nodes.items())
        health = {n.name: n.health for n in nodes}
        logs: dict[LogSource, tuple[LogEntry, ...]] = {}
        for source, log in self._logs.items():
            last = log.lines[-1].seq if log.lines else -1
            if last != log.frozen_seq:
                log.frozen, log.frozen_seq = tuple(log.lines), last
            logs[source] = log.frozen
        running = self._present()
        ops = (*reversed(self._running.values()), *self._done_ops)
        return FleetSnapshot(
            at=now,
            nodes=nodes,
            lanes=tuple(self._lane_view(*slot, health, now) for slot in self._lanes),
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
            ops=ops,
            bench=tuple(self._bench),
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

    def _node_view(self, name: str, node: _Node, now: float) -> NodeView:
        last, lost = node.last, node.lost
        age = now - last.at if last else None
        if lost is not None:
            long_lost = node.lost_since is not None and now - node.lost_since > DOWN_AFTER_S
            health = NodeHealth.DOWN if lost.down or long_lost or last is None else NodeHealth.STALE
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
            ranks_known=last.ranks_known if last else False,
            host=last.host if last else None,
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
        health: dict[str, NodeHealth], now: float,
    ) -> LaneView:  # fmt: skip
        base = LaneView(
            lane,
            cluster,
            nodes,
            LanePhase.STOPPED,
            endpoint=endpoint,
            image_ok=self._image_ok(lane, nodes),
            bench_headline=self._bench_headline(lane, cluster),
        )
        view = observed(base, self._observe(lane, cluster, nodes, health, now))
        running = [  # an op without a cluster (stop by lane) concerns the lane wherever it runs
            op for op in self._running.values() if op.lane == lane and op.cluster in (cluster, "")
        ]
        return overlaid(view, running[-1] if running else None)

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
        mode = f" {p.mode}" if p.mode else ""
        return f"tg {p.tg_tps:.1f} t/s @{depth_label(p.depth)} c{p.concurrency}{mode}"
