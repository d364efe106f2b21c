"""The exporter's pure core: a fixed snapshot → the metric families a scrape serves."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client import generate_latest as prometheus_text
from prometheus_client.openmetrics.exposition import generate_latest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from cockpit.bench.artifacts import save_report
from cockpit.exporter.families import ExportSnapshot, SnapshotCollector, bench_headlines
from cockpit.exporter.serve import read_headlines
from cockpit.ops.op_records import OpRecord
from cockpit.status.lock_view import LockView
from cockpit.status.model import Health, NodeRow
from cockpit.status.op_view import OpInFlight
from cockpit.telemetry.boot import BootState
from cockpit.telemetry.gpu import MemoryView
from cockpit.telemetry.host import HostLoad
from cockpit.telemetry.metrics import Quantiles
from cockpit.tui.state.inputs import RankOnNode
from cockpit.tui.state.views import (
    EngineView,
    FleetSnapshot,
    LanePhase,
    LaneView,
    NodeHealth,
    NodeView,
)
from tests.bench.test_reports import _report

LANE = "qwen3-0.6b-2x"
KEY = f"{LANE}@2nodes-dac"


def _row(node: str, health: Health = Health.OK, temp: float | None = 51.0) -> NodeRow:
    return NodeRow(
        node=node, health=health, detail="", data_age_s=0.4, gpu_name="NVIDIA GB10",
        util_pct=37.0, temp_c=temp, power_w=11.5, sm_mhz=2418.0, mem_mhz=None,
        memory=MemoryView("meminfo", 122572.0, 61286.0, 2048.0), containers=(), failed=(),
        host=HostLoad(cpu_pct=12.5, rx_bps=2e6, tx_bps=1e6, swap_used_bytes=0),
    )  # fmt: skip


def _node(name: str, health: NodeHealth, *ranks: RankOnNode) -> NodeView:
    return NodeView(name, health, 0.4, None, None, None, ranks, ())


def _engine() -> EngineView:
    return EngineView(
        lane_key=KEY, at=0.0, running=2.0, waiting=0.0, kv_usage=0.25, pool_tokens=100000,
        pool_gib=1.5, prefix_hit_rate=0.5, preemptions_total=3.0, prompt_tps=900.0,
        gen_tps=42.0, spec_acceptance=None, kv_history=(), gen_history=(), prompt_history=(),
        ttft=Quantiles(count=10, mean=0.15, p50=0.12, p90=0.25, p95=0.3, p99=0.4),
    )  # fmt: skip


def _fleet() -> FleetSnapshot:
    nodes = (
        _node("dgx1", NodeHealth.LIVE, RankOnNode(LANE, "2nodes-dac", 0)),
        _node("dgx2", NodeHealth.DOWN, RankOnNode(LANE, "2nodes-dac", 1)),  # down: not counted
    )
    lanes = (
        LaneView(LANE, "2nodes-dac", ("dgx1", "dgx2"), LanePhase.SERVING),
        LaneView("other", "2nodes-dac", ("dgx1", "dgx2"), LanePhase.STOPPED),
    )
    boot = BootState(weights_seconds=4.5, init_seconds=20.0)
    return FleetSnapshot(
        0.0, nodes, lanes, {KEY: _engine()}, {}, {}, {}, {}, (), (), boots={KEY: boot}
    )


def _served(snapshot: ExportSnapshot) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """What a scrape returns, parsed back from OpenMetrics text: (sample name, labels) → value."""
    collector = SnapshotCollector()
    collector.latest = snapshot
    registry = CollectorRegistry()
    registry.register(collector)
    text = generate_latest(registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_node_figures_in_base_units_and_none_for_a_node_that_is_not_ok() -> None:
    served = _served(ExportSnapshot((_row("dgx1"), _row("dgx2", Health.DOWN, temp=80.0))))
    one = (("node", "dgx1"),)
    assert served[("cockpit_node_up", one)] == 1.0
    assert served[("cockpit_node_up", (("node", "dgx2"),))] == 0.0
    assert served[("cockpit_node_gpu_utilization_ratio", one)] == 0.37
    assert served[("cockpit_node_gpu_temperature_celsius", one)] == 51.0
    assert served[("cockpit_node_gpu_power_watts", one)] == 11.5
    assert served[("cockpit_node_gpu_sm_clock_hertz", one)] == 2418e6
    assert served[("cockpit_node_memory_total_bytes", one)] == 122572.0 * 1024**2
    assert served[("cockpit_node_memory_used_bytes", one)] == 61286.0 * 1024**2
    assert served[("cockpit_node_cpu_busy_ratio", one)] == 0.125
    assert served[("cockpit_node_network_receive_bytes_per_second", one)] == 2e6
    assert served[("cockpit_node_network_transmit_bytes_per_second", one)] == 1e6
    assert served[("cockpit_node_swap_used_bytes", one)] == 0
    assert ("cockpit_node_gpu_memory_clock_hertz", one) not in served  # nvidia-smi had none
    down = [k for k in served if ("node", "dgx2") in k[1] and k[0] != "cockpit_node_up"]
    assert down == [("cockpit_node_data_age_seconds", (("node", "dgx2"),))]


def test_lane_state_ranks_boot_and_engine() -> None:
    served = _served(ExportSnapshot(fleet=_fleet()))
    lane = (("cluster", "2nodes-dac"), ("lane", LANE))
    states = {
        dict(labels)["state"]: value
        for (name, labels), value in served.items()
        if name == "cockpit_lane_state" and dict(labels)["lane"] == LANE
    }
    assert states == {phase.value: float(phase is LanePhase.SERVING) for phase in LanePhase}
    assert served[("cockpit_lane_state", (*lane[:1], ("lane", "other"), ("state", "stopped")))]
    assert served[("cockpit_lane_ranks_up", lane)] == 1.0  # dgx2 is DOWN
    assert served[("cockpit_lane_ranks_expected", lane)] == 2.0
    assert served[("cockpit_lane_boot_phase_seconds", (*lane, ("phase", "weights")))] == 4.5
    assert served[("cockpit_lane_boot_phase_seconds", (*lane, ("phase", "engine_init")))] == 20
    assert ("cockpit_lane_boot_phase_seconds", (*lane, ("phase", "compile"))) not in served
    assert served[("cockpit_lane_kv_cache_usage_ratio", lane)] == 0.25
    assert served[("cockpit_lane_kv_pool_bytes", lane)] == 1.5 * 1024**3
    assert served[("cockpit_lane_generation_tokens_per_second", lane)] == 42.0
    assert served[("cockpit_lane_prompt_tokens_per_second", lane)] == 900.0
    assert served[("cockpit_lane_ttft_seconds", (*lane, ("quantile", "0.95")))] == 0.3
    assert served[("cockpit_lane_preemptions_total", lane)] == 3.0
    other = (("cluster", "2nodes-dac"), ("lane", "other"))
    assert ("cockpit_lane_kv_cache_usage_ratio", other) not in served  # no engine: no figure


def test_bench_headlines_are_the_newest_report_per_lane(tmp_path) -> None:
    old = _report({(0, 1): 50.0, (4096, 2): 40.0}, "old", "2026-01-01_000000")
    new = _report({(0, 1): 60.0}, "new", "2026-02-01_120000")
    save_report(tmp_path, new)
    save_report(tmp_path, old)
    (tmp_path / "notes.json").write_text(json.dumps({"not": "a report"}))
    headlines = read_headlines(tmp_path)
    assert headlines == bench_headlines([new])
    served = _served(ExportSnapshot(bench=headlines))
    point = (("cluster", new.cluster), ("concurrency", "1"), ("depth", "0"), ("lane", new.lane))
    assert served[("cockpit_bench_generation_tokens_per_second", point)] == 60.0
    assert len([k for k in served if k[0] == "cockpit_bench_generation_tokens_per_second"]) == 1
    stamp = served[("cockpit_bench_report_timestamp_seconds", (point[0], point[3]))]
    assert stamp == 1769947200.0  # 2026-02-01 12:00:00 UTC


def test_every_cockpits_lock_is_a_series_naming_its_holder() -> None:
    """Issue 31: a lock held by someone else appeared nowhere until an operation was refused."""
    held = LockView("alice@ops-laptop", "launch", LANE, 1.0, 12.0, None)
    locked = dataclasses.replace(_row("dgx1"), lock=held)
    served = _served(ExportSnapshot((locked, _row("dgx2"))))
    labels = (("holder", "alice@ops-laptop"), ("lane", LANE), ("node", "dgx1"))
    assert served[("cockpit_node_lock_held", (*labels, ("operation", "launch")))] == 1.0
    assert served[("cockpit_node_lock_age_seconds", (("node", "dgx1"),))] == 12.0
    assert [k for k in served if "_lock_" in k[0] and ("node", "dgx2") in k[1]] == []


def test_promtool_finds_the_node_families_clean() -> None:
    """`promtool check metrics` (Debian's prometheus package, which CI installs) lints the names,
    units, types and help of every node family, the lock's too."""
    promtool = shutil.which("promtool") or "/usr/bin/promtool"
    if not Path(promtool).exists():
        pytest.fail("promtool is not installed (Debian's prometheus package; .ci/run installs it)")
    held = LockView("alice@ops-laptop", "launch", LANE, 1.0, 12.0, None)
    collector = SnapshotCollector()
    collector.latest = ExportSnapshot((dataclasses.replace(_row("dgx1"), lock=held),))
    registry = CollectorRegistry()
    registry.register(collector)
    text = prometheus_text(registry).decode()
    assert "cockpit_node_lock_held{" in text
    checked = subprocess.run(
        [promtool, "check", "metrics"], input=text, capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0 and not checked.stdout + checked.stderr, checked


def test_every_cockpits_operation_in_flight_is_a_series() -> None:
    """Issue 31: other cockpits' operations appeared nowhere; a stale one (its cockpit gone)
    reads 0."""
    live = OpRecord(
        "a1", "alice", "ops-laptop", 7, "bench", LANE, "2nodes-dac", 1700.0, "point 1/4"
    )
    dead = OpRecord("b2", "bob", "deck", 9, "launch", "other", "2nodes-dac", 1600.0)
    ops = (OpInFlight(live, ("dgx1",), 3.0), OpInFlight(dead, ("dgx1", "dgx2"), 300.0))
    served = _served(ExportSnapshot(operations=ops))
    alice = (("cluster", "2nodes-dac"), ("holder", "alice@ops-laptop"), ("id", "a1"))
    alice += (("lane", LANE), ("op", "bench"))
    bob = (("cluster", "2nodes-dac"), ("holder", "bob@deck"), ("id", "b2"), ("lane", "other"))
    bob += (("op", "launch"),)
    assert served[("cockpit_operation_in_flight", alice)] == 1.0
    assert served[("cockpit_operation_in_flight", bob)] == 0.0
    assert served[("cockpit_operation_started_timestamp_seconds", alice)] == 1700.0
