"""One snapshot of the fleet → Prometheus metric families. Pure: no I/O, no clock.

Names follow Prometheus' conventions: the `cockpit_` prefix, base units in the name (`_celsius`,
`_watts`, `_hertz`, `_bytes`, `_seconds`, `_ratio`), a counter's `_total`. A node's figures are
exported only while its health is OK: a DOWN node's last values would read as live in a graph,
so `cockpit_node_up` says 0 and its figures go (Prometheus marks them stale).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from cockpit.bench.models import Report
from cockpit.ops.locks import LEASE
from cockpit.status.model import Health, NodeRow
from cockpit.status.op_view import OpInFlight
from cockpit.tui.state.views import EngineView, FleetSnapshot, LanePhase, NodeHealth, lane_key

MIB = 1024**2
GIB = 1024**3
LANE = ["lane", "cluster"]
BOOT_PHASES = {  # label → the BootState field with the seconds vLLM's log gave for that phase
    "weights": "weights_seconds",
    "compile": "compile_seconds",
    "cuda_graphs": "graph_seconds",
    "engine_init": "init_seconds",
}


@dataclass(frozen=True)
class BenchHeadline:
    """One point of a lane's newest bench report."""

    lane: str
    cluster: str
    created_s: float  # the report's creation, Unix seconds
    depth: int
    concurrency: int
    tg_tps: float | None
    pp_tps: float | None


@dataclass(frozen=True)
class ExportSnapshot:
    """What one scrape serves: node rows (`fleet_status`), the TUI store's lanes and engines,
    and the bench headlines."""

    nodes: tuple[NodeRow, ...] = ()
    fleet: FleetSnapshot | None = None
    bench: tuple[BenchHeadline, ...] = ()
    operations: tuple[OpInFlight, ...] = ()  # every cockpit's, as the nodes record them


def bench_headlines(reports: Iterable[Report]) -> tuple[BenchHeadline, ...]:
    """Every point of the newest report per lane and cluster (by its creation stamp)."""
    newest: dict[tuple[str, str], Report] = {}
    for report in reports:
        key = (report.lane, report.cluster)
        if key not in newest or report.created > newest[key].created:
            newest[key] = report
    return tuple(
        BenchHeadline(
            report.lane,
            report.cluster,
            datetime.strptime(report.created, "%Y-%m-%d_%H%M%S").replace(tzinfo=UTC).timestamp(),
            point.spec.depth,
            point.spec.concurrency,
            point.tg,
            point.pp,
        )
        for _, report in sorted(newest.items())
        for point in report.points
    )


def _gauge(
    name: str, doc: str, labels: Sequence[str], rows: Iterable[tuple[Sequence[str], float | None]]
) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=labels)
    for values, value in rows:
        if value is not None:
            family.add_metric(list(values), value)
    return family


def _scaled(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor


def node_families(rows: Sequence[NodeRow]) -> list[Metric]:
    live = [r for r in rows if r.health is Health.OK]

    def per_node(name: str, doc: str, value: Callable[[NodeRow], float | None]) -> Metric:
        return _gauge(name, doc, ["node"], (((r.node,), value(r)) for r in live))

    def memory(field: str) -> Callable[[NodeRow], float | None]:
        return lambda r: _scaled(getattr(r.memory, field), MIB) if r.memory else None

    return [
        _gauge(
            "cockpit_node_up",
            "1 while the node's probe streams fresh facts, 0 when it is stale, down or connecting.",
            ["node"],
            (((r.node,), float(r.health is Health.OK)) for r in rows),
        ),
        _gauge(
            "cockpit_node_data_age_seconds",
            "Seconds since the node last sent a fact.",
            ["node"],
            (((r.node,), r.data_age_s) for r in rows),
        ),
        per_node(
            "cockpit_node_gpu_utilization_ratio",
            "GPU utilisation (nvidia-smi), 0..1.",
            lambda r: _scaled(r.util_pct, 0.01),
        ),
        per_node(
            "cockpit_node_gpu_temperature_celsius",
            "GPU temperature.",
            lambda r: r.temp_c,
        ),
        per_node("cockpit_node_gpu_power_watts", "GPU power draw.", lambda r: r.power_w),
        per_node(
            "cockpit_node_gpu_sm_clock_hertz",
            "GPU SM clock.",
            lambda r: _scaled(r.sm_mhz, 1e6),
        ),
        per_node(
            "cockpit_node_gpu_memory_clock_hertz",
            "GPU memory clock.",
            lambda r: _scaled(r.mem_mhz, 1e6),
        ),
        per_node(
            "cockpit_node_memory_total_bytes",
            "Memory the GPU can use (GB10: the unified memory, from /proc/meminfo).",
            memory("total_mib"),
        ),
        per_node(
            "cockpit_node_memory_used_bytes",
            "Memory in use (GB10: unified memory, CPU and GPU together).",
            memory("used_mib"),
        ),
        per_node(
            "cockpit_node_memory_gpu_apps_bytes",
            "Memory held by GPU processes (nvidia-smi's compute apps).",
            memory("gpu_apps_mib"),
        ),
        per_node(
            "cockpit_node_cpu_busy_ratio",
            "Share of the host CPU busy (not idle or iowait) between two probe rounds, 0..1.",
            lambda r: _scaled(r.host.cpu_pct, 0.01) if r.host else None,
        ),
        per_node(
            "cockpit_node_network_receive_bytes_per_second",
            "Bytes a second received over the node's links (loopback, bridges, veths left out).",
            lambda r: r.host.rx_bps if r.host else None,
        ),
        per_node(
            "cockpit_node_network_transmit_bytes_per_second",
            "Bytes a second sent over the node's links (loopback, bridges, veths left out).",
            lambda r: r.host.tx_bps if r.host else None,
        ),
        per_node(
            "cockpit_node_swap_used_bytes",
            "Swap in use (SwapTotal - SwapFree).",
            lambda r: r.host.swap_used_bytes if r.host else None,
        ),
        _gauge(
            "cockpit_node_lock_held",
            "1 while an operation holds the node's lock (any cockpit's): who, what.",
            ["node", "holder", "operation", "lane"],
            (
                ((r.node, r.lock.holder, r.lock.operation, r.lock.lane), 1.0)
                for r in live
                if r.lock is not None
            ),
        ),
        per_node(
            "cockpit_node_lock_age_seconds",
            "Seconds since the node's lock was written or renewed, by the node's clock (a holder "
            f"renews it every {LEASE.renew_every_s:g} s; not renewed for {LEASE.seconds:g} s, it "
            "is stale).",
            lambda r: r.lock.age_s if r.lock else None,
        ),
    ]


def lane_families(fleet: FleetSnapshot) -> list[Metric]:
    lanes = fleet.lanes
    up: dict[tuple[str, str], int] = {}
    for node in fleet.nodes:
        if node.health is not NodeHealth.DOWN:
            for rank in node.ranks:
                if rank.running:
                    up[(rank.lane, rank.cluster)] = up.get((rank.lane, rank.cluster), 0) + 1
    state = GaugeMetricFamily(
        "cockpit_lane_state",
        "1 for the lane's state as the TUI shows it (one series per state), else 0.",
        labels=[*LANE, "state"],
    )
    for lane in lanes:
        for phase in LanePhase:
            state.add_metric([lane.lane, lane.cluster, phase.value], float(lane.phase is phase))
    boot = GaugeMetricFamily(
        "cockpit_lane_boot_phase_seconds",
        "How long a boot phase took, as the head's vLLM log says (the last boot).",
        labels=[*LANE, "phase"],
    )
    for lane in lanes:
        head = fleet.boots.get(lane_key(lane.lane, lane.cluster))
        for phase, attr in BOOT_PHASES.items():
            seconds = getattr(head, attr) if head is not None else None
            if seconds is not None:
                boot.add_metric([lane.lane, lane.cluster, phase], seconds)
    engines = [
        (lane, e) for lane in lanes if (e := fleet.engines.get(lane_key(lane.lane, lane.cluster)))
    ]

    def per_lane(name: str, doc: str, value: Callable[[EngineView], float | None]) -> Metric:
        return _gauge(
            name, doc, LANE, (((lane.lane, lane.cluster), value(e)) for lane, e in engines)
        )

    ttft = GaugeMetricFamily(
        "cockpit_lane_ttft_seconds",
        "Time to first token (server-side) over the scrapes of the last minute, by quantile.",
        labels=[*LANE, "quantile"],
    )
    preemptions = CounterMetricFamily(
        "cockpit_lane_preemptions", "Requests the engine preempted.", labels=LANE
    )
    for lane, e in engines:
        for q, value in (("0.5", e.ttft.p50), ("0.95", e.ttft.p95)) if e.ttft else ():
            if value is not None:
                ttft.add_metric([lane.lane, lane.cluster, q], value)
        if e.preemptions_total is not None:
            preemptions.add_metric([lane.lane, lane.cluster], e.preemptions_total)
    return [
        state,
        _gauge(
            "cockpit_lane_ranks_up",
            "Running rank containers of the lane on nodes that are not down.",
            LANE,
            (((x.lane, x.cluster), float(up.get((x.lane, x.cluster), 0))) for x in lanes),
        ),
        _gauge(
            "cockpit_lane_ranks_expected",
            "Ranks of a whole lane (one per node of its cluster).",
            LANE,
            (((lane.lane, lane.cluster), float(len(lane.nodes))) for lane in lanes),
        ),
        boot,
        per_lane(
            "cockpit_lane_kv_cache_usage_ratio",
            "Share of the KV-cache pool in use, 0..1.",
            lambda e: e.kv_usage,
        ),
        per_lane(
            "cockpit_lane_kv_pool_tokens",
            "Tokens the KV-cache pool holds.",
            lambda e: e.pool_tokens,
        ),
        per_lane(
            "cockpit_lane_kv_pool_bytes",
            "Size of the KV-cache pool.",
            lambda e: _scaled(e.pool_gib, GIB),
        ),
        per_lane(
            "cockpit_lane_requests_running",
            "Requests the engine is running.",
            lambda e: e.running,
        ),
        per_lane(
            "cockpit_lane_requests_waiting",
            "Requests waiting for the engine.",
            lambda e: e.waiting,
        ),
        per_lane(
            "cockpit_lane_generation_tokens_per_second",
            "Generated tokens per second over the last scrape window of the engine.",
            lambda e: e.gen_tps,
        ),
        per_lane(
            "cockpit_lane_prompt_tokens_per_second",
            "Prompt tokens processed per second over the last scrape window of the engine.",
            lambda e: e.prompt_tps,
        ),
        per_lane(
            "cockpit_lane_prefix_cache_hit_ratio",
            "Prefix-cache hits over queries in the last scrape window, 0..1.",
            lambda e: e.prefix_hit_rate,
        ),
        per_lane(
            "cockpit_lane_spec_decode_acceptance_ratio",
            "Accepted over proposed draft tokens in the last scrape window, 0..1.",
            lambda e: e.spec_acceptance,
        ),
        ttft,
        preemptions,
    ]


def bench_families(headlines: Sequence[BenchHeadline]) -> list[Metric]:
    labels = [*LANE, "depth", "concurrency"]

    def point(h: BenchHeadline) -> tuple[str, ...]:
        return (h.lane, h.cluster, str(h.depth), str(h.concurrency))

    return [
        _gauge(
            "cockpit_bench_generation_tokens_per_second",
            "Decode (tg) tokens per second at that depth and concurrency (newest report).",
            labels,
            ((point(h), h.tg_tps) for h in headlines),
        ),
        _gauge(
            "cockpit_bench_prompt_tokens_per_second",
            "Prefill (pp) tokens per second at that depth and concurrency (newest report).",
            labels,
            ((point(h), h.pp_tps) for h in headlines),
        ),
        _gauge(
            "cockpit_bench_report_timestamp_seconds",
            "When the lane's newest bench report was made (Unix seconds).",
            LANE,
            {(h.lane, h.cluster): h.created_s for h in headlines}.items(),
        ),
    ]


def operation_families(ops: Sequence[OpInFlight]) -> list[Metric]:
    labels = ["id", "op", "lane", "cluster", "holder"]

    def key(op: OpInFlight) -> tuple[str, ...]:
        r = op.record
        return (r.id, r.op, r.lane, r.cluster, r.holder)

    return [
        _gauge(
            "cockpit_operation_in_flight",
            "1 while an operation (any cockpit's) is recorded on its nodes, 0 once its record is "
            f"stale (not renewed for {LEASE.seconds:g} s: its cockpit is gone).",
            labels,
            ((key(op), 0.0 if op.stale else 1.0) for op in ops),
        ),
        _gauge(
            "cockpit_operation_started_timestamp_seconds",
            "When the operation started (Unix seconds, its cockpit's clock).",
            labels,
            ((key(op), op.record.since) for op in ops),
        ),
    ]


def families(snapshot: ExportSnapshot) -> list[Metric]:
    lanes = lane_families(snapshot.fleet) if snapshot.fleet is not None else []
    ops = operation_families(snapshot.operations)
    return [*node_families(snapshot.nodes), *lanes, *bench_families(snapshot.bench), *ops]


class SnapshotCollector(Collector):
    """Serves `latest` as it is at the scrape: the shell swaps in a new snapshot every second, so a
    scrape never waits on SSH."""

    def __init__(self) -> None:
        self.latest = ExportSnapshot()

    def collect(self) -> Iterator[Metric]:
        yield from families(self.latest)
