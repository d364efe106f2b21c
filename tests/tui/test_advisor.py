"""The advisor: each rule on the views (pure), each hint naming the recipe field or the key that
changes it, shown once at its condition's onset, again only after the condition cleared."""

from __future__ import annotations

from dataclasses import replace

from cockpit.ops.op_records import OpOnNode, OpRecord
from cockpit.telemetry.gpu import GpuSample
from cockpit.telemetry.metrics import EngineMetrics, parse_metrics
from cockpit.tui.state import EngineSampled, NodeSampled, RankOnNode, Store
from cockpit.tui.state.advisor import Onsets, engine_hints, node_hints
from cockpit.tui.state.views import EngineView, Hint, NodeHealth, NodeView
from tests.tui import scene
from tests.tui.scene import FIXTURES

QWEN, DAC = "qwen3-0.6b-2x", "2nodes-dac"
SERVE = scene.inventory().recipes[QWEN].serve  # max_num_seqs 32, gpu_memory_utilization 0.5
SERVING = f"{scene.LANE}@{scene.CLUSTER}"


def view(**changes: object) -> EngineView:
    base = EngineView(
        lane_key=f"{QWEN}@{DAC}", at=0.0, running=2.0, waiting=0.0, kv_usage=0.3,
        pool_tokens=None, pool_gib=None, prefix_hit_rate=0.4, preemptions_total=0.0,
        prompt_tps=None, gen_tps=None, spec_acceptance=None, kv_history=(), gen_history=(),
        prompt_history=(), window_s=60.0, prefix_caching=True,
    )  # fmt: skip
    return replace(base, **changes)


def texts(v: EngineView, bench: bool = False) -> list[str]:
    return [h.text for h in engine_hints(v, SERVE, bench)]


def test_a_quiet_engine_gets_no_advice() -> None:
    assert engine_hints(view(), SERVE) == ()
    assert engine_hints(view(prefix_caching=None, finished=(("stop", 50.0),)), SERVE) == ()


def test_preemptions_name_the_pool_fields_with_their_values() -> None:
    assert texts(view(preemptions_recent=3.0)) == [
        "KV pool short: 3 preemptions in 60s — raise serve.gpu_memory_utilization (0.5) or "
        "lower serve.max_num_seqs (32)"
    ]
    # a lane whose recipe is not known still gets the fields
    assert (
        "raise serve.gpu_memory_utilization or"
        in engine_hints(view(preemptions_recent=1.0), None)[0].text
    )


def test_truncation_above_a_fifth_of_enough_requests_and_not_during_a_bench() -> None:
    truncated = view(finished=(("length", 6.0), ("stop", 4.0)))
    assert texts(truncated) == [
        "truncation: 60% of 10 requests in 60s ended at their token limit (finish reason "
        "length) — raise the clients' max_tokens, or serve.max_model_len (32768) if prompts "
        "fill it"
    ]
    assert texts(truncated, bench=True) == []  # a bench's fixed-length requests: on purpose
    assert texts(view(finished=(("length", 3.0), ("stop", 1.0)))) == []  # too few to tell
    assert texts(view(finished=(("stop", 80.0), ("length", 20.0)))) == []  # 20 %: not above


def test_a_backlog_of_half_a_minute_names_what_holds_the_queue() -> None:
    at_cap = view(backlog_s=45.0, running=32.0, waiting=40.0)
    assert texts(at_cap) == [
        "queue backlog: 40 waiting vs 32 running for 45s — raise serve.max_num_seqs (32)"
    ]
    full = view(backlog_s=45.0, running=4.0, waiting=9.0, kv_usage=0.95)
    assert texts(full)[0].endswith(
        "the KV pool is 95% full: raise serve.gpu_memory_utilization (0.5)"
    )
    budget = view(backlog_s=45.0, running=4.0, waiting=9.0)
    assert texts(budget)[0].endswith("raise serve.max_num_batched_tokens (8192)")
    assert texts(view(backlog_s=29.0, running=4.0, waiting=9.0)) == []


def test_prefix_caching_off_names_the_field_and_the_flag() -> None:
    off = view(prefix_caching=False, prefix_hit_rate=None)
    assert texts(off) == [
        "prefix caching is off: set serve.enable_prefix_caching = true (--enable-prefix-caching)"
    ]
    assert texts(replace(off, prefix_caching=True)) == []


def test_a_hot_gpu_on_a_live_node_names_the_lane_to_stop() -> None:
    gpu = GpuSample(temperature_c=88.0)
    ranks = (RankOnNode(QWEN, DAC, 0),)
    node = NodeView("dgx1", NodeHealth.LIVE, 0.0, None, gpu, None, ranks, ())
    assert [h.text for h in node_hints(node)] == [
        "GPU at 88°C (≥ 85°C), it may lower its clocks — check the node's cooling, or stop "
        "qwen3-0.6b-2x@2nodes-dac (s)"
    ]
    assert node_hints(replace(node, gpu=GpuSample(temperature_c=84.0))) == ()
    assert node_hints(replace(node, health=NodeHealth.STALE)) == ()  # old figures
    assert node_hints(replace(node, ranks=()))[0].text.endswith("check the node's cooling")


def test_onsets_once_then_cleared_then_again() -> None:
    onsets = Onsets()
    hot = Hint("gpu_thermal", "dgx1", "GPU hot", "…")
    short = Hint("kv_preemption", "lane@c", "KV pool short", "…")
    assert onsets.update("dgx1", (hot,)) == [hot]
    assert onsets.update("dgx1", (hot,)) == []  # still holds: not again
    assert onsets.update("lane@c", (short,)) == [short]  # another subject: its own onset
    assert onsets.update("dgx1", ()) == []  # cleared
    assert onsets.update("dgx1", (hot,)) == [hot]  # began again
    onsets.forget("lane@c")  # the lane stopped: a relaunch that preempts is news
    assert onsets.update("lane@c", (short,)) == [short]


def serving_store() -> Store:
    store = Store(scene.inventory())
    store.apply_all(scene.node_samples(store.inventory))
    return store


def scrape(store: Store, at: float, **counters: float) -> None:
    store.apply(EngineSampled(scene.LANE, scene.CLUSTER, EngineMetrics(at=at, **counters)))


def test_the_store_keeps_a_hint_per_onset_not_per_scrape() -> None:
    store = serving_store()
    for at, total in ((0, 0), (10, 1), (20, 2), (30, 2)):
        scrape(store, at, preemptions=total)
    hints = store.snapshot(scene.T0).hints
    assert [(seq, h.rule) for seq, h in hints] == [(1, "kv_preemption")]
    assert hints[0][1].text.startswith("KV pool short: 1 preemption in 10s")
    # the pane's advice holds the live figures while the condition holds
    assert (
        store.snapshot(scene.T0)
        .engines[SERVING]
        .advice[0]
        .text.startswith("KV pool short: 2 preemptions in 30s")
    )
    for at in (40, 50, 60, 70, 80):  # no preemption in the last minute: cleared
        scrape(store, at, preemptions=2)
    assert store.snapshot(scene.T0).engines[SERVING].advice == ()
    scrape(store, 90, preemptions=3)
    assert [seq for seq, _ in store.snapshot(scene.T0).hints] == [1, 2]


def test_a_lane_that_stopped_and_came_back_is_advised_again() -> None:
    store = serving_store()
    scrape(store, 0, preemptions=0)
    scrape(store, 10, preemptions=1)
    lane_nodes = [s for s in scene.node_samples(store.inventory) if isinstance(s, NodeSampled)]
    last = {s.node: s for s in lane_nodes}
    for sample in last.values():
        store.apply(replace(sample, ranks=()))  # the lane's containers are gone
    for sample in last.values():
        store.apply(sample)  # launched again
    scrape(store, 20, preemptions=0)
    scrape(store, 30, preemptions=2)
    assert [seq for seq, _ in store.snapshot(scene.T0).hints] == [1, 2]


def test_prefix_caching_off_in_a_real_capture_is_advised_once() -> None:
    text = (FIXTURES / "vllm-0.32-cpu" / "metrics_under_load.txt").read_text()
    off = text.replace('enable_prefix_caching="True"', 'enable_prefix_caching="False"')
    store = serving_store()
    for at in (0.0, 2.0, 4.0):
        metrics = replace(parse_metrics(off, at=at), prefix_cache_hits=0.0)
        store.apply(EngineSampled(scene.LANE, scene.CLUSTER, metrics))
    assert [h.rule for _, h in store.snapshot(scene.T0).hints] == ["prefix_caching_off"]


def test_a_hot_node_is_advised_once_until_it_cooled() -> None:
    store = serving_store()
    sample = next(s for s in scene.node_samples(store.inventory) if isinstance(s, NodeSampled))

    def temperature(celsius: float, at: float) -> None:
        assert sample.gpu is not None
        gpu = replace(sample.gpu, temperature_c=celsius)
        store.apply(replace(sample, node="dgx5", gpu=gpu, at=scene.T0 + at))

    for at, celsius in enumerate((90.0, 91.0, 70.0, 90.0)):
        temperature(celsius, at)
    hints = store.snapshot(scene.T0 + 4).hints
    assert [(seq, h.subject, h.rule) for seq, h in hints] == [
        (1, "dgx5", "gpu_thermal"),
        (2, "dgx5", "gpu_thermal"),
    ]


def test_another_cockpits_bench_is_not_advised_on() -> None:
    """Issue 31: a read-only viewer following a CLI bench raised "truncation: 100 % of 10
    requests … raise max_tokens" about the bench's own fixed-length requests; the bench is in
    flight on the lane's nodes (`cockpit.ops.op_records`), so the viewer knows it is one."""
    bench = OpRecord("b1", "ops", "deck", 7, "bench", scene.LANE, scene.CLUSTER, 1.0, "point 1/2")
    for records, advised in (((OpOnNode(bench, 2.0),), []), ((), ["output_truncation"])):
        store = serving_store()
        for sample in scene.node_samples(store.inventory):
            store.apply(replace(sample, ops=records) if isinstance(sample, NodeSampled) else sample)
        for at, length in ((0, 0), (10, 5), (20, 10)):
            scrape(store, at, request_success={"length": length})
        assert [h.rule for _, h in store.snapshot(scene.T0).hints] == advised
