"""The store on recorded facts: lane phases, lost nodes, bounded buffers, stall, bench deltas."""

from __future__ import annotations

from dataclasses import replace

from cockpit.ops.events import Finished, Planned, Progress
from cockpit.telemetry.metrics import EngineMetrics
from cockpit.tui.render import bar, num, sparkline
from cockpit.tui.state import EngineSampled, LanePhase, NodeHealth, NodeLost, RankLines, Store
from cockpit.tui.state.stall import is_decode_stall
from cockpit.tui.state.store import LOG_LINES, NCCL_LINES
from cockpit.tui.widgets.tail import LEVELS, keep
from tests.tui import scene


def scene_store() -> Store:
    inv = scene.inventory()
    store = Store(inv, scene.baselines())
    store.apply_all(scene.scene(inv))
    return store


def test_lane_states_from_containers_boot_log_and_operations() -> None:
    snap = scene_store().snapshot(scene.T0)
    states = {lane.key: lane.state_text for lane in snap.lanes}
    assert states[f"{scene.LANE}@{scene.CLUSTER}"] == "serving"
    assert states["qwen3-0.6b-2x@2nodes-dac"] == "syncing load on dgx1 44%"
    assert states["mimo26-pro-mopd-8x-sparkring@8nodes-switch"] == "stopped"
    serving = snap.lane(f"{scene.LANE}@{scene.CLUSTER}")
    assert serving is not None and serving.image_ok is True
    assert serving.bench_headline == "tg 60.2 t/s @8K c1"


def test_a_boot_failure_names_the_decisive_line() -> None:
    inv = scene.inventory()
    store = Store(inv)
    lines = tuple((scene.FIXTURES / "vllm_boot_kv_oom.log").read_text().splitlines())
    store.apply_all(scene.node_samples(inv))
    store.apply(RankLines("dgx5", scene.LANE, scene.CLUSTER, 0, lines))
    lane = store.snapshot(scene.T0).lane(f"{scene.LANE}@{scene.CLUSTER}")
    assert lane is not None and lane.phase is LanePhase.FAILED
    assert "ValueError" in lane.detail or "memory" in lane.detail.lower()


def test_a_failed_operation_marks_a_stopped_lane_failed_with_its_summary() -> None:
    store = Store(scene.inventory())
    store.apply(Planned(op="launch", lane="qwen3-0.6b-2x", cluster="2nodes-dac", steps=("x",)))
    store.apply(Finished.refused("launch", "preflight refused: image missing on dgx2",
                                 lane="qwen3-0.6b-2x", cluster="2nodes-dac"))  # fmt: skip
    lane = store.snapshot(scene.T0).lane("qwen3-0.6b-2x@2nodes-dac")
    assert (
        lane is not None and lane.state_text == "failed: preflight refused: image missing on dgx2"
    )


def test_lost_nodes_keep_their_last_values_marked_stale_or_down() -> None:
    snap = scene_store().snapshot(scene.T0)
    nodes = {n.name: n for n in snap.nodes}
    stale, down = nodes["dgx3"], nodes["dgx4"]
    assert stale.health is NodeHealth.STALE and stale.gpu is not None
    assert stale.age_s is not None and stale.age_s > 60 and stale.error == "connection refused"
    assert down.health is NodeHealth.DOWN and down.gpu is None
    assert nodes["dgx5"].health is NodeHealth.LIVE
    # a live node that stops sending turns STALE by age alone, without a loss report
    later = scene_store().snapshot(scene.T0 + 30)
    assert {n.name: n.health for n in later.nodes}["dgx5"] is NodeHealth.STALE


def test_a_node_that_answers_again_is_live_again() -> None:
    store = scene_store()
    inv = scene.inventory()
    fresh = [s for s in scene.node_samples(inv) if getattr(s, "node", "") == "dgx1"][-1]
    store.apply(NodeLost("dgx1", scene.T0, "timed out"))
    assert store.snapshot(scene.T0).nodes[0].health is NodeHealth.STALE
    store.apply(replace(fresh, at=scene.T0))
    assert store.snapshot(scene.T0).nodes[0].health is NodeHealth.LIVE


def test_every_buffer_is_bounded_under_a_flood() -> None:
    store = Store(scene.inventory())
    nccl = "spark-9f8f:315:315 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0"
    for i in range(30):
        lines = tuple(f"line {i}-{j}" if j % 2 else nccl for j in range(1000))
        store.apply(RankLines("dgx5", scene.LANE, scene.CLUSTER, 0, lines))
    snap = store.snapshot(scene.T0)
    assert len(snap.logs[("dgx5", 0)]) == LOG_LINES
    assert len(snap.nccl) == NCCL_LINES
    seqs = [e.seq for e in snap.logs[("dgx5", 0)]]
    assert seqs == sorted(seqs) and seqs[-1] == 30_000


def test_decode_stall_rule() -> None:
    busy = [50.0, 52.0, 48.0, 51.0, 49.0]
    assert is_decode_stall(busy, 10.0, running=2)
    assert not is_decode_stall(busy, 30.0, running=2)
    assert not is_decode_stall(busy, 1.0, running=0)  # idle: no alarm
    assert not is_decode_stall(busy[:3], 1.0, running=2)  # too little history


def test_engine_view_flags_a_stall_from_metrics_counters() -> None:
    store = Store(scene.inventory())
    gen = 0.0
    for i in range(12):
        gen += 500.0 if i < 10 else 20.0  # 50 tok/s, then 2 tok/s with requests running
        metrics = EngineMetrics(at=10.0 * i, requests_running=2, generation_tokens=gen,
                                prompt_tokens=100.0 * i, kv_cache_usage=0.5)  # fmt: skip
        store.apply(EngineSampled(scene.LANE, scene.CLUSTER, metrics))
    view = store.snapshot(scene.T0).engines[f"{scene.LANE}@{scene.CLUSTER}"]
    assert view.stalled and view.gen_tps == 2.0 and len(view.gen_history) == 11


def test_bench_rows_carry_the_baseline_and_flags() -> None:
    rows = {(r.depth, r.concurrency): r for r in scene_store().snapshot(scene.T0).bench}
    assert rows[(0, 1)].baseline_tg_tps == 67.3 and rows[(0, 1)].tg_tps == 66.8
    assert rows[(4096, 2)].flags == ("prefill-in-decode",)


def test_render_helpers() -> None:
    assert sparkline([0, 50, 100], 3, 0, 100) == " ▄█"  # 0 is blank, the middle is half
    assert sparkline([], 4) == "    "
    assert bar(0.5, 4) == "██░░" and bar(None, 3) == "···"
    assert num(None) == "–" and num(12345.0) == "12.3k" and num(3.14159, 2) == "3.14"


def test_a_sync_in_flight_shows_its_progress_and_eta() -> None:
    store = Store(scene.inventory())
    kw = {"op": "sync", "lane": "qwen3-0.6b-2x", "cluster": "2nodes-dac"}
    store.apply(Planned(steps=("transfer",), **kw))
    store.apply(Progress(step="transfer", done=3.0, total=12.0, unit="GiB", eta_s=95.0, **kw))
    lane = store.snapshot(scene.T0).lane("qwen3-0.6b-2x@2nodes-dac")
    assert lane is not None and lane.state_text == "syncing transfer 25% ETA 1m35s"


def test_log_level_filter_keeps_warnings_and_errors_as_the_store_tagged_them() -> None:
    store = Store(scene.inventory())
    lines = ("INFO ready", "WARNING 12 requests preempted", "ERROR EngineCore died", "Traceback")
    store.apply(RankLines("dgx5", scene.LANE, scene.CLUSTER, 0, lines))
    entries = store.snapshot(scene.T0).logs[("dgx5", 0)]
    shown = [[e.text for e in entries if keep(e, "", level)] for level in range(len(LEVELS))]
    assert shown == [list(lines), list(lines[1:]), list(lines[2:])]
    assert [e.text for e in entries if keep(e, "engine", 0)] == ["ERROR EngineCore died"]
