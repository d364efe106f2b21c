"""The store on recorded facts: lane states from observation (operations only overlay while they
run), lost nodes, bounded buffers, stall, bench rows."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cockpit.events import (
    Finished,
    Notice,
    Planned,
    Progress,
    Severity,
    StepFinished,
    StepStarted,
)
from cockpit.telemetry.metrics import EngineMetrics, parse_metrics
from cockpit.telemetry.slo import Slo
from cockpit.tui.render import bar, brief_seconds, num, share_range, sparkline
from cockpit.tui.state import (
    EngineSampled,
    LanePhase,
    NodeHealth,
    NodeLost,
    NodeSampled,
    RankLines,
    RankOnNode,
    Store,
)
from cockpit.tui.state.inputs import OpEnded, OpUpdate
from cockpit.tui.state.stall import is_decode_stall
from cockpit.tui.state.store import DOWN_AFTER_S, LOG_LINES, NCCL_LINES
from cockpit.tui.state.views import LogSource
from cockpit.tui.widgets.tail import LEVELS, keep
from tests.tui import scene
from tests.tui.scene import FIXTURES

SERVING = f"{scene.LANE}@{scene.CLUSTER}"
QWEN, DAC = "qwen3-0.6b-2x", "2nodes-dac"
QWEN_KEY = f"{QWEN}@{DAC}"
PRO, EIGHT = "mimo26-pro-mopd-8x-sparkring", "8nodes-switch"


def scene_store() -> Store:
    inv = scene.inventory()
    store = Store(inv, scene.baselines())
    store.apply_all(scene.scene(inv))
    return store


def fleet_store(
    ranks: dict[str, tuple[RankOnNode, ...]], at: float = scene.T0, unheard: tuple[str, ...] = ()
) -> Store:
    """Every node of the inventory but `unheard` sampled at `at`, holding `ranks`."""
    store = Store(scene.inventory())
    sample = next(s for s in scene.node_samples(store.inventory) if isinstance(s, NodeSampled))
    for name in store.inventory.nodes:
        if name in unheard:
            continue
        store.apply(replace(sample, node=name, at=at, ranks=ranks.get(name, ())))
    return store


def qwen_ranks(**changes: object) -> dict[str, tuple[RankOnNode, ...]]:
    return {
        node: (replace(RankOnNode(QWEN, DAC, rank), **changes),)  # type: ignore[arg-type]
        for rank, node in enumerate(("dgx1", "dgx2"))
    }


def answering(store: Store, lane: str = QWEN, cluster: str = DAC, at: float = scene.T0) -> None:
    """The head's engine answered `/metrics` at `at`."""
    store.apply(EngineSampled(lane, cluster, EngineMetrics(at=at, kv_cache_usage=0.1)))


def state(store: Store, key: str, now: float = scene.T0) -> str:
    lane = store.snapshot(now).lane(key)
    assert lane is not None
    return lane.state_text


def op(run: int, event: object) -> OpUpdate:
    return OpUpdate(run, event)  # type: ignore[arg-type]


def test_lane_states_from_containers_boot_log_and_operations() -> None:
    snap = scene_store().snapshot(scene.T0)
    states = {lane.key: lane.state_text for lane in snap.lanes}
    assert states[SERVING] == "serving"
    assert states["qwen3-0.6b-2x@2nodes-dac"] == "syncing load on dgx1 44%"
    assert states["mimo26-pro-mopd-8x-sparkring@8nodes-switch"] == "stopped"
    serving = snap.lane(SERVING)
    assert serving is not None and serving.image_ok is True and serving.live
    assert serving.bench_headline == "tg 60.2 t/s @8K c1"


def test_a_boot_failure_names_the_decisive_line() -> None:
    inv = scene.inventory()
    store = Store(inv)
    lines = tuple((scene.FIXTURES / "vllm_boot_kv_oom.log").read_text().splitlines())
    store.apply_all(scene.node_samples(inv))
    store.apply(RankLines("dgx5", scene.LANE, scene.CLUSTER, 0, lines))
    lane = store.snapshot(scene.T0).lane(SERVING)
    assert lane is not None and lane.phase is LanePhase.FAILED
    assert "ValueError" in lane.detail or "memory" in lane.detail.lower()


def test_a_refused_launch_leaves_a_serving_lane_serving_and_no_trace() -> None:
    store = fleet_store(qwen_ranks())
    answering(store)
    kw = {"op": "launch", "lane": QWEN, "cluster": DAC}
    store.apply(op(1, Planned(steps=("lock", "preflight", "start"), **kw)))
    store.apply(op(1, StepStarted(step="preflight", **kw)))
    assert state(store, QWEN_KEY) == "serving"  # checking changes nothing on the row
    assert [o.current for o in store.snapshot(scene.T0).ops] == ["preflight"]
    store.apply(op(1, Notice(severity=Severity.ERROR, message="already runs", node="dgx1", **kw)))
    refused = Finished.refused("launch", "preflight refused: already runs", lane=QWEN, cluster=DAC)
    store.apply(op(1, refused))
    store.apply(OpEnded(1))
    snap = store.snapshot(scene.T0)
    assert state(store, QWEN_KEY) == "serving"
    assert snap.ops == ()  # a refusal changes nothing on screen but its notice


def test_a_refused_launch_then_a_stop_reads_stopped() -> None:
    store = fleet_store({})
    kw = {"lane": QWEN, "cluster": DAC}
    store.apply(op(1, Planned(op="launch", steps=("x",), **kw)))
    store.apply(op(1, Finished.refused("launch", "preflight refused: image missing on dgx2", **kw)))
    assert state(store, QWEN_KEY) == "stopped"
    store.apply(op(2, Planned(op="stop", steps=("stop",), lane=QWEN)))
    store.apply(op(2, Finished.done("stop", "stopped", lane=QWEN)))
    assert state(store, QWEN_KEY) == "stopped"


def test_a_launch_past_ready_reads_booting_until_the_nodes_list_its_ranks() -> None:
    """The launch's readiness answered before the nodes' next container list: the row must not
    fall back to "stopped" between the boot and "serving" (seen in `cockpit demo`)."""
    store = fleet_store({})
    kw = {"op": "launch", "lane": QWEN, "cluster": DAC}
    store.apply(op(1, Planned(steps=("lock", "start", "boot", "ready", "watch"), **kw)))
    store.apply(op(1, StepStarted(step="start", **kw)))
    assert state(store, QWEN_KEY).startswith("booting")
    store.apply(op(1, StepFinished(step="ready", **kw)))
    store.apply(op(1, StepStarted(step="watch", **kw)))
    assert state(store, QWEN_KEY) == "booting answering, watched"
    store = fleet_store(qwen_ranks())
    answering(store)
    store.apply(op(1, Planned(steps=("watch",), **kw)))
    store.apply(op(1, StepStarted(step="watch", **kw)))
    assert state(store, QWEN_KEY) == "serving"  # once listed, the nodes' word wins


def test_a_failed_launch_whose_ranks_were_removed_is_stopped_with_its_reason_in_operations() -> (
    None
):
    store = fleet_store({})
    kw = {"op": "launch", "lane": QWEN, "cluster": DAC}
    store.apply(op(1, Planned(steps=("start", "boot"), **kw)))
    store.apply(op(1, StepStarted(step="start", node="dgx2", **kw)))
    assert state(store, QWEN_KEY) == "booting start"  # the ranks are not listed yet
    store.apply(op(1, Notice(severity=Severity.ERROR, message="rank 1 on dgx2 failed",
                             node="dgx2", line="RuntimeError: boom", **kw)))  # fmt: skip
    store.apply(op(1, Finished.failed("launch", "rank 1 on dgx2 failed: boom", lane=QWEN,
                                      cluster=DAC)))  # fmt: skip
    store.apply(OpEnded(1))
    snap = store.snapshot(scene.T0)
    assert state(store, QWEN_KEY) == "stopped"
    (done,) = snap.ops
    assert done.ok is False and done.summary == "rank 1 on dgx2 failed: boom"
    assert done.node == "dgx2"  # where the Log pane reads the failure


def test_a_switch_with_a_nested_sync_leaves_nothing_running_when_it_ends() -> None:
    """The switch's sync events say op "sync" and never get a Finished of their own."""
    store = fleet_store({})
    sw = {"op": "switch", "lane": QWEN, "cluster": DAC}
    sy = {"op": "sync", "lane": QWEN, "cluster": DAC}
    store.apply(op(7, Planned(steps=("lock", "sync", "launch"), **sw)))
    store.apply(op(7, StepStarted(step="transfer", node="dgx2", **sy)))
    store.apply(op(7, Progress(step="transfer", node="dgx2", done=1.0, total=4.0, **sy)))
    snap = store.snapshot(scene.T0)
    assert [(o.op, o.current) for o in snap.ops] == [("switch", "sync transfer")]
    assert state(store, QWEN_KEY) == "syncing transfer 25%"
    store.apply(op(7, StepFinished(step="transfer", node="dgx2", **sy)))
    store.apply(op(7, StepStarted(step="boot", **sw)))
    store.apply(op(7, Progress(step="boot", node="dgx1", message="loading weights 40%", **sw)))
    assert state(store, QWEN_KEY) == "booting loading weights 40%"
    for name, ranks in qwen_ranks().items():  # the nodes list the ranks, the engine answers
        sample = replace(store._nodes[name].last, ranks=ranks)  # type: ignore[arg-type]
        store.apply(sample)
    answering(store)
    store.apply(op(7, Finished.done("switch", "ready", lane=QWEN, cluster=DAC)))
    store.apply(OpEnded(7))
    snap = store.snapshot(scene.T0)
    assert [o.running for o in snap.ops] == [False]
    assert state(store, QWEN_KEY) == "serving"


def test_a_run_that_ends_without_its_finished_leaves_the_running_overlay() -> None:
    store = fleet_store({})
    kw = {"op": "sync", "lane": QWEN, "cluster": DAC}
    store.apply(op(3, Planned(steps=("transfer",), **kw)))
    store.apply(op(3, Progress(step="transfer", done=1.0, total=2.0, **kw)))
    store.apply(OpEnded(3, "cancelled by the operator"))
    snap = store.snapshot(scene.T0)
    assert [(o.running, o.summary) for o in snap.ops] == [(False, "cancelled by the operator")]
    assert state(store, QWEN_KEY) == "stopped"


def test_containers_decide_stopped_failed_booting_serving() -> None:
    store = fleet_store(qwen_ranks())
    assert state(store, QWEN_KEY) == "booting starting"  # running, no boot line, no engine
    boot = tuple((scene.FIXTURES / "vllm_boot_spark_first.log").read_text().splitlines()[:10])
    store.apply(RankLines("dgx1", QWEN, DAC, 0, boot, fresh=True))
    assert state(store, QWEN_KEY).startswith("booting loading weights")
    answering(store)
    assert state(store, QWEN_KEY) == "serving"
    # the engine stops answering: not serving any more, and says how long
    assert state(store, QWEN_KEY, now=scene.T0 + 40) == "unresponsive: no /metrics answer for 40s"
    # a worker exits: failed, with its exit code
    worker = RankOnNode(QWEN, DAC, 1, running=False, exit_code=1)
    store.apply(replace(store._nodes["dgx2"].last, ranks=(worker,)))  # type: ignore[arg-type]
    assert state(store, QWEN_KEY) == "failed: rank 1 on dgx2 exited (code 1)"
    # or its `docker run` was cut short between create and start
    never = RankOnNode(QWEN, DAC, 1, running=False, started=False)
    store.apply(replace(store._nodes["dgx2"].last, ranks=(never,)))  # type: ignore[arg-type]
    assert state(store, QWEN_KEY) == "failed: rank 1 on dgx2 never started"
    # every container removed (by a stop, by hand): stopped, whatever happened before
    for name in ("dgx1", "dgx2"):
        store.apply(replace(store._nodes[name].last, ranks=()))  # type: ignore[arg-type]
    assert state(store, QWEN_KEY) == "stopped"


def test_a_lane_whose_head_node_is_down_is_unknown_not_booting() -> None:
    """The cockpit opened while the head's node is down: its worker runs, nobody can tell
    whether the lane serves (it read "booting starting" before)."""
    store = fleet_store({"dgx2": qwen_ranks()["dgx2"]}, unheard=("dgx1",))
    store.apply(NodeLost("dgx1", scene.T0, "connection refused", down=True))
    assert state(store, QWEN_KEY) == "unknown: head dgx1 unreachable"
    store.apply(replace(store._nodes["dgx2"].last, ranks=()))  # type: ignore[arg-type]
    assert state(store, QWEN_KEY) == "unknown: dgx1 unreachable"


def test_a_lane_with_ranks_missing_is_not_serving() -> None:
    ranks = qwen_ranks()
    del ranks["dgx2"]
    store = fleet_store(ranks)
    answering(store)
    assert state(store, QWEN_KEY) == "booting 1/2 ranks up"


def test_a_stopped_lane_leaves_no_engine_view_nor_nccl() -> None:
    store = fleet_store(qwen_ranks())
    answering(store)
    nccl = "dgx1:10:10 [0] NCCL INFO NET/IB : Using [0]rocep1s0f1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>"
    store.apply(RankLines("dgx1", QWEN, DAC, 0, (nccl,), fresh=True))
    snap = store.snapshot(scene.T0)
    assert QWEN_KEY in snap.engines and QWEN_KEY in snap.nccl and QWEN_KEY in snap.nccl_ranks
    for name in ("dgx1", "dgx2"):
        store.apply(replace(store._nodes[name].last, ranks=()))  # type: ignore[arg-type]
    answering(store)  # a scrape that was in flight when the containers went
    snap = store.snapshot(scene.T0)
    assert snap.engines == {} and snap.nccl == {} and snap.nccl_ranks == {}
    assert snap.focus_lane(QWEN_KEY) is None
    # its log stays readable (a failure's last lines), but it is no longer live
    assert LogSource(QWEN_KEY, "dgx1", 0) in snap.logs and not snap.live_sources


def test_nccl_lists_every_rank_of_an_8_rank_lane_tagged_by_node() -> None:
    nodes = [f"dgx{i}" for i in range(1, 9)]
    store = fleet_store({n: (RankOnNode(PRO, EIGHT, r),) for r, n in enumerate(nodes)})
    for r, n in enumerate(nodes):
        line = f"spark-{r}:4{r}:4{r} [0] NCCL INFO comm 0x1 rank {r} nranks 8 cudaDev 0 busId 1 "
        store.apply(RankLines(n, PRO, EIGHT, r, (line + "- Init COMPLETE",), fresh=True))
    ranks = store.snapshot(scene.T0).nccl_ranks[f"{PRO}@{EIGHT}"]
    assert [(r.node, r.transport.rank, r.transport.nranks) for r in ranks] == [
        (n, r, 8) for r, n in enumerate(nodes)
    ]


def test_two_lanes_rank_0_are_two_sources() -> None:
    store = fleet_store({"dgx1": (RankOnNode(QWEN, DAC, 0), RankOnNode(PRO, EIGHT, 0))})
    store.apply(RankLines("dgx1", QWEN, DAC, 0, ("qwen",)))
    store.apply(RankLines("dgx1", PRO, EIGHT, 0, ("pro",)))
    logs = store.snapshot(scene.T0).logs
    assert [e.text for e in logs[LogSource(QWEN_KEY, "dgx1", 0)]] == ["qwen"]
    assert [e.text for e in logs[LogSource(f"{PRO}@{EIGHT}", "dgx1", 0)]] == ["pro"]


def test_a_fresh_stream_starts_the_rank_log_and_the_boot_over() -> None:
    store = fleet_store(qwen_ranks())
    failed = ("(EngineCore pid=1) ERROR 12-02 03:56:51 [core.py:1] EngineCore failed",)
    store.apply(RankLines("dgx1", QWEN, DAC, 0, failed, fresh=True))
    assert state(store, QWEN_KEY).startswith("failed")
    store.apply(RankLines("dgx1", QWEN, DAC, 0, ("a new container",), fresh=True))
    assert state(store, QWEN_KEY) == "booting starting"
    source = LogSource(QWEN_KEY, "dgx1", 0)
    assert [e.text for e in store.snapshot(scene.T0).logs[source]] == ["a new container"]


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


def test_a_node_whose_reconnects_fail_is_down_at_once_and_a_long_gap_too() -> None:
    store = scene_store()
    store.apply(NodeLost("dgx7", scene.T0, "connection refused", retry_in_s=2.0, down=True))
    assert store.snapshot(scene.T0).nodes[6].health is NodeHealth.DOWN
    store.apply(NodeLost("dgx6", scene.T0, "probe ended (exit 1)"))  # the link still connects
    assert store.snapshot(scene.T0).nodes[5].health is NodeHealth.STALE
    store.apply(NodeLost("dgx6", scene.T0 + 5, "probe ended (exit 1)"))
    assert store.snapshot(scene.T0 + DOWN_AFTER_S + 1).nodes[5].health is NodeHealth.DOWN


def test_a_node_failure_changes_no_other_node_or_the_serving_lane() -> None:
    store = scene_store()
    before = {n.name: n for n in store.snapshot(scene.T0).nodes}
    store.apply(NodeLost("dgx7", scene.T0, "connection refused", down=True))
    after = store.snapshot(scene.T0)
    for node in after.nodes:
        if node.name != "dgx7":
            assert node == before[node.name]
    assert {n.name: n.ranks for n in after.nodes}["dgx5"] == (
        RankOnNode(scene.LANE, scene.CLUSTER, 0),
    )
    lane = after.lane(SERVING)
    assert lane is not None and lane.phase is LanePhase.SERVING and "dgx7" in lane.note


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
    store.apply_all(scene.node_samples(store.inventory))  # the lane's containers are listed
    nccl = "spark-9f8f:315:315 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0"
    for i in range(30):
        lines = tuple(f"line {i}-{j}" if j % 2 else nccl for j in range(1000))
        store.apply(RankLines("dgx5", scene.LANE, scene.CLUSTER, 0, lines))
    snap = store.snapshot(scene.T0)
    source = LogSource(SERVING, "dgx5", 0)
    assert len(snap.logs[source]) == LOG_LINES
    assert len(snap.nccl[SERVING]) == NCCL_LINES
    seqs = [e.seq for e in snap.logs[source]]
    assert seqs == sorted(seqs) and seqs[-1] == 30_000


def test_decode_stall_rule() -> None:
    busy = [50.0, 52.0, 48.0, 51.0, 49.0]
    assert is_decode_stall(busy, 10.0, running=2)
    assert not is_decode_stall(busy, 30.0, running=2)
    assert not is_decode_stall(busy, 1.0, running=0)  # idle: no alarm
    assert not is_decode_stall(busy[:3], 1.0, running=2)  # too little history


def test_engine_view_flags_a_stall_from_metrics_counters() -> None:
    store = Store(scene.inventory())
    store.apply_all(scene.node_samples(store.inventory))
    gen = 0.0
    for i in range(12):
        gen += 500.0 if i < 10 else 20.0  # 50 tok/s, then 2 tok/s with requests running
        metrics = EngineMetrics(at=10.0 * i, requests_running=2, generation_tokens=gen,
                                prompt_tokens=100.0 * i, kv_cache_usage=0.5)  # fmt: skip
        store.apply(EngineSampled(scene.LANE, scene.CLUSTER, metrics))
    view = store.snapshot(scene.T0).engines[SERVING]
    assert view.stalled and view.gen_tps == 2.0 and len(view.gen_history) == 11


def test_bench_rows_carry_the_baseline_and_flags() -> None:
    rows = {(r.depth, r.concurrency): r for r in scene_store().snapshot(scene.T0).bench}
    assert rows[(0, 1)].baseline_tg_tps == 67.3 and rows[(0, 1)].tg_tps == 66.8
    assert rows[(4096, 2)].flags == ("prefill-in-decode",)
    assert rows[(0, 1)].runs == 1


def test_render_helpers() -> None:
    assert sparkline([0, 50, 100], 3, 0, 100) == " ▄█"  # 0 is blank, the middle is half
    assert sparkline([], 4) == "    "
    assert bar(0.5, 4) == "██░░" and bar(None, 3) == "···"
    assert num(None) == "–" and num(12345.0) == "12.3k" and num(3.14159, 2) == "3.14"
    assert [brief_seconds(v) for v in (None, 0.00002, 0.0042, 0.175, 9.25, 480.0)] == [
        "–", "0.0ms", "4.2ms", "175ms", "9.2s", "480s"
    ]  # fmt: skip
    # a range keeps the true share inside it: the low end rounds down, the high end up
    assert share_range(0.97, 0.97) == "97%" and share_range(44 / 106, 97 / 106) == "41–92%"
    assert share_range(0.8, 0.8 + 1e-12) == "80%" and share_range(0.801, 0.806) == "80–81%"


def test_a_sync_in_flight_shows_its_progress_and_eta() -> None:
    store = Store(scene.inventory())
    kw = {"op": "sync", "lane": QWEN, "cluster": DAC}
    store.apply(op(1, Planned(steps=("transfer",), **kw)))
    store.apply(
        op(1, Progress(step="transfer", done=3.0, total=12.0, unit="GiB", eta_s=95.0, **kw))
    )
    assert state(store, QWEN_KEY) == "syncing transfer 25% ETA 1m35s"


def test_log_level_filter_keeps_warnings_and_errors_as_the_store_tagged_them() -> None:
    store = Store(scene.inventory())
    lines = ("INFO ready", "WARNING 12 requests preempted", "ERROR EngineCore died", "Traceback")
    store.apply(RankLines("dgx5", scene.LANE, scene.CLUSTER, 0, lines))
    entries = store.snapshot(scene.T0).logs[LogSource(SERVING, "dgx5", 0)]
    shown = [[e.text for e in entries if keep(e, "", level)] for level in range(len(LEVELS))]
    assert shown == [list(lines), list(lines[1:]), list(lines[2:])]
    assert [e.text for e in entries if keep(e, "engine", 0)] == ["ERROR EngineCore died"]


def test_a_node_whose_container_list_has_not_come_cannot_tell_its_lanes() -> None:
    """Issue 19 ("while one node was down the Nodes pane showed the head of the only serving
    lane with lane/rank '–'"): a cockpit opened while a worker is down hears the head's GPU
    before its `docker ps`; the head's lane/rank is not known yet, not "none", and the lane is
    not "stopped" meanwhile."""
    store = fleet_store({}, unheard=("dgx1", "dgx2"))
    sample = next(s for s in scene.node_samples(store.inventory) if isinstance(s, NodeSampled))
    store.apply(replace(sample, node="dgx1", at=scene.T0, ranks=(), ranks_known=False))
    store.apply(NodeLost("dgx2", scene.T0, "connection refused", down=True))
    head = store.snapshot(scene.T0).nodes[0]
    assert head.health is NodeHealth.LIVE and not head.ranks_known
    assert state(store, QWEN_KEY) == "unknown: dgx1 not heard from yet"
    store.apply(replace(sample, node="dgx1", at=scene.T0, ranks=qwen_ranks()["dgx1"]))
    answering(store)
    assert store.snapshot(scene.T0).nodes[0].ranks_known
    assert state(store, QWEN_KEY) == "serving · dgx2 unreachable"


def test_access_lines_are_tagged_and_counted_over_the_bounded_buffer() -> None:
    """The Log pane's title counts the access lines it folds: the count follows the buffer as
    old lines fall off it. Docker's timestamp is split off every line (the feed asks for it)."""
    store = Store(scene.inventory())
    store.apply_all(scene.node_samples(store.inventory))
    access = 'INFO:     127.0.0.1:5 - "GET /metrics HTTP/1.1" 200 OK'
    failed = 'INFO:     127.0.0.1:5 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error'
    stats = "(APIServer pid=1) INFO 10-02 19:06:27 [loggers.py:257] Engine 000: Avg prompt"
    stamp = "2026-10-02T19:06:27.123456789Z"
    lines = tuple(f"{stamp} {text}" for text in (access, access, failed, stats))
    store.apply(RankLines("dgx5", scene.LANE, scene.CLUSTER, 0, lines))
    source = LogSource(SERVING, "dgx5", 0)
    snap = store.snapshot(scene.T0)
    assert snap.access == {source: 2}
    entries = snap.logs[source]
    assert [e.access for e in entries] == [True, True, False, False]
    assert [e.text for e in entries] == [access, access, failed, stats]
    assert {e.ts for e in entries} == {stamp}
    store.apply(RankLines("dgx5", scene.LANE, scene.CLUSTER, 0, (stats,) * (LOG_LINES - 3)))
    assert store.snapshot(scene.T0).access == {source: 1}  # the first access line fell off
    store.apply(RankLines("dgx5", scene.LANE, scene.CLUSTER, 0, (stats,)))
    assert store.snapshot(scene.T0).access == {}


def test_stamped_nccl_lines_are_summarised_once() -> None:
    """Every line carries its own time: a repeated NCCL INFO line is still told apart by its
    text alone, and the transport is read from it."""
    store = Store(scene.inventory())
    store.apply_all(scene.node_samples(store.inventory))
    line = "spark-9f8f:315:315 [0] NCCL INFO NET/IB : Using [0]rocep1s0f0:1/RoCE [RO]; OOB enp1s0f0np0:10.0.0.5<0>"
    lines = tuple(f"2026-10-02T19:06:2{i}.000000000Z {line}" for i in range(3))
    store.apply(RankLines("dgx5", scene.LANE, scene.CLUSTER, 0, lines))
    snap = store.snapshot(scene.T0)
    assert [e.text for e in snap.nccl[SERVING]] == [line] * 3
    (rank,) = snap.nccl_ranks[SERVING]
    assert "RoCE" in rank.transport.headline


def real_capture(name: str, at: float) -> EngineMetrics:
    """A real vLLM 0.32 `/metrics` capture, scraped at `at`."""
    return parse_metrics((FIXTURES / "vllm-0.32-cpu" / name).read_text(), at=at)


def test_engine_view_latency_finish_reasons_and_goodput_over_the_last_minute() -> None:
    """Quantiles, finish reasons, goodput and preemptions cover the scrapes of the last
    WINDOW_S, not the last 2 s: a scrape window often holds no finished request at all."""
    store = Store(scene.inventory(), slo=Slo(ttft_s=0.015, tpot_s=0.1))
    store.apply_all(scene.node_samples(store.inventory))
    t = scene.T0
    idle, load = real_capture("metrics_idle.txt", t), real_capture("metrics_under_load.txt", t)
    for metrics in (idle, replace(load, at=t + 10), replace(load, at=t + 50)):
        store.apply(EngineSampled(scene.LANE, scene.CLUSTER, metrics))
    view = store.snapshot(t + 50).engines[SERVING]
    assert view.window_s == 50 and view.gen_tps == 0.0  # rates: the last two scrapes only
    assert view.ttft.count == 106 and view.tpot.count == 104 and view.decode.count == 104
    assert view.queue.first_bound == 0.3 and view.queue.p95 <= 0.3  # vLLM's first bucket
    assert view.finished == (("length", 102), ("stop", 2))
    assert view.finished_per_s == pytest.approx(104 / 50)
    # TTFT SLO 15 ms, between the 10 and 20 ms buckets: 44 to 97 of 106 met it; TPOT all
    assert view.goodput.low == pytest.approx(44 / 106) and not view.goodput.exact
    assert view.goodput.high == pytest.approx(97 / 106) and view.slo.ttft_s == 0.015
    assert view.preemptions_recent == 0 and view.prefix_caching is True
    # a minute later the idle scrape has left the window, and with it every request
    store.apply(EngineSampled(scene.LANE, scene.CLUSTER, replace(load, at=t + 75)))
    later = store.snapshot(t + 75).engines[SERVING]
    assert later.window_s == 25 and later.ttft is None and later.finished == ()
    assert later.goodput is None and later.finished_per_s == 0.0


def test_a_backlog_is_timed_from_when_waiting_first_exceeded_running() -> None:
    store = Store(scene.inventory())
    store.apply_all(scene.node_samples(store.inventory))
    for at, waiting in ((0.0, 0), (2.0, 5), (4.0, 6), (40.0, 7)):
        metrics = EngineMetrics(at=at, requests_running=4, requests_waiting=waiting)
        store.apply(EngineSampled(scene.LANE, scene.CLUSTER, metrics))
    assert store.snapshot(scene.T0).engines[SERVING].backlog_s == 38.0
    caught_up = EngineMetrics(at=42.0, requests_running=4, requests_waiting=4)
    store.apply(EngineSampled(scene.LANE, scene.CLUSTER, caught_up))
    assert store.snapshot(scene.T0).engines[SERVING].backlog_s is None


@pytest.mark.parametrize(
    "line",
    [
        "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12590, "
        "OpType=_ALLGATHER_BASE, NumelIn=1404928, NumelOut=2809856, Timeout(ms)=600000) ran for "
        "600060 milliseconds before timing out.",
        "[rank1]:[E1003 18:20:05.512218437 ProcessGroupNCCL.cpp:685] [Rank 1] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=12590, OpType=ALLREDUCE, NumelIn=1, "
        "NumelOut=1, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.",
    ],
    ids=["torch", "c10"],
)
def test_a_collective_timeout_reaches_the_nccl_pane(line: str) -> None:
    """torch's watchdog lines hold no "NCCL " (`WorkNCCL(`, `ProcessGroupNCCL.cpp`): the store
    passed only lines holding it to the tracker, so a live lane's timeout never showed."""
    store = fleet_store(qwen_ranks())
    init = "dgx2:20:20 [0] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 0 busId 1 - Init COMPLETE"
    store.apply(RankLines("dgx2", QWEN, DAC, 1, (init, line), fresh=True))
    (rank,) = store.snapshot(scene.T0).nccl_ranks[QWEN_KEY]
    assert rank.transport.timeout is not None and rank.transport.timeout.seq == 12590
    assert "collective timed out" in (rank.transport.problem or "")
