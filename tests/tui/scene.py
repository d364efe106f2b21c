"""A recorded, deterministic fleet scene for snapshot and store tests, built from the real formats.

Nodes: GB10 nvidia-smi CSV (memory `[N/A]`) + /proc/meminfo; the 4x lane serving on dgx5-8 with
the Spark boot log and the RoCE NCCL capture as its ranks' logs; `/metrics` from the two real
spec-decode captures (earlier scrapes are the first one with smaller counters); a stale node
(dgx3), a node that never answered (dgx4), a sync in flight and a bench sweep half done.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from cockpit.bench.events import PointFinished
from cockpit.bench.method import PhaseStats, Stat
from cockpit.bench.models import Flag, FlagKind, PointResult, PointSpec
from cockpit.config import Inventory, load_inventory
from cockpit.config.inventory import PROJECT_RECIPES
from cockpit.events import Finished, Planned, Progress, StepStarted
from cockpit.telemetry.gpu import node_memory_view, parse_meminfo, parse_query_gpu
from cockpit.telemetry.host import HostLoad
from cockpit.telemetry.metrics import parse_metrics
from cockpit.tui.state.inputs import (
    EngineSampled,
    NodeLost,
    NodeSampled,
    OpUpdate,
    RankLines,
    RankOnNode,
    StoreInput,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "telemetry"
T0 = 1_790_000_000.0  # the scene's "now"
LANE = "mimo26-flash-mopd-4x-sparkring"
CLUSTER = "dgx58-switch"
BENCH_NODES = ("dgx5", "dgx6", "dgx7", "dgx8")
# seed §3 honest baseline, tg t/s warm-prefix (depth: c1, c2)
SEED_BASELINE = {0: (67.3, 72.2), 4096: (62.1, 78.9), 8192: (61.5, 73.8), 16384: (55.2, 69.9)}


def inventory() -> Inventory:
    return load_inventory(PROJECT_RECIPES)


def baselines() -> dict[str, dict[tuple[int, int], float]]:
    return {LANE: {(d, c + 1): v for d, pair in SEED_BASELINE.items() for c, v in enumerate(pair)}}


def _read(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def node_samples(inv: Inventory) -> list[StoreInput]:
    base = parse_query_gpu(_read("smi_gb10_units.csv"))[0]
    memory = node_memory_view([base], parse_meminfo(_read("meminfo_gb10.txt")))
    image = inv.recipes[LANE].image.ref
    out: list[StoreInput] = []
    for i, name in enumerate(sorted(inv.nodes)):
        ranks = (RankOnNode(LANE, CLUSTER, BENCH_NODES.index(name)),) if name in BENCH_NODES else ()
        busy = name in BENCH_NODES
        for step in range(24):
            if name == "dgx4":
                break
            if name == "dgx3" and step > 10:
                break
            util = (60 + (step * 7 + i * 11) % 40) if busy else (step * 3 + i) % 9
            gpu = replace(base, utilization_pct=float(util), temperature_c=40.0 + util / 3)
            if not busy:
                gpu = replace(gpu, power_w=14.0 + i, clock_sm_mhz=208.0)
            at = T0 - (24 - step) * 2.0 - (40 if name == "dgx3" else 0)
            # a serving rank's API server and tokenizer keep a core or two busy, its NCCL
            # traffic crosses the links (bytes a second)
            host = (
                HostLoad(9.0 + i, 180e6 + i * 1e6, 176e6 + i * 1e6, 0)
                if busy
                else HostLoad(1.0 + i / 10, 2e3, 1.5e3, 0)
            )
            out.append(
                NodeSampled(name, at, gpu, memory, ranks, (image,) if busy else (), host=host)
            )
    out.append(NodeLost("dgx3", T0 - 1, "connection refused", retry_in_s=8.0))
    out.append(NodeLost("dgx4", T0 - 1, "timed out after 3.0s", retry_in_s=30.0))
    return out


def rank_logs() -> list[StoreInput]:
    boot = tuple(_read("vllm_boot_spark_first.log").splitlines())
    nccl = _read("nccl_roce_tp2.log").splitlines()
    hosts = ("spark-9f8f", "spark-506c")  # NCCL ranks 0 and 1 in the capture
    out: list[StoreInput] = [RankLines("dgx5", LANE, CLUSTER, 0, boot, T0 - 30)]
    for rank, host in enumerate(hosts):
        lines = tuple(
            line for line in nccl if line.startswith(host) or not line.startswith("spark-")
        )
        out.append(RankLines(BENCH_NODES[rank], LANE, CLUSTER, rank, lines, T0 - 20))
    return out


def engine_samples() -> list[StoreInput]:
    first = parse_metrics(_read("metrics_spec_dp2_t0.txt"), at=T0 - 10)
    last = parse_metrics(_read("metrics_spec_dp2_t1.txt"), at=T0)
    out: list[StoreInput] = []
    prompt, gen = first.prompt_tokens or 0.0, first.generation_tokens or 0.0
    earlier = []
    for k in range(1, 21):  # walk back in time, 10 s per scrape, at a varying load
        rate = 0.6 + 0.4 * ((k * 37) % 10) / 10
        prompt, gen = prompt - 6000 * rate, gen - 650 * rate
        earlier.append(
            replace(
                first,
                at=first.at - 10 * k,
                prompt_tokens=prompt,
                generation_tokens=gen,
                kv_cache_usage=0.2 + 0.03 * ((k * 13) % 10),
            )
        )
    out += [EngineSampled(LANE, CLUSTER, m) for m in reversed(earlier)]
    out += [EngineSampled(LANE, CLUSTER, first), EngineSampled(LANE, CLUSTER, last)]
    return out


def _point(depth: int, c: int, tg: float, pp: float, flags: tuple[Flag, ...] = ()) -> PointFinished:
    def stat(v: float) -> Stat:
        return Stat(v, 0.0, (v,))

    inference = PhaseStats(c, stat(pp), stat(pp), stat(tg), stat(tg), None, None, None, 3, 0)
    spec = PointSpec(depth=depth, concurrency=c, pp=2048, tg=128)
    result = PointResult(spec=spec, inference=inference, flags=flags)
    return PointFinished(op="bench", lane=LANE, cluster=CLUSTER, ts=T0 - 5, result=result)


SYNC_RUN, LAUNCH_RUN, BENCH_RUN = -1, -2, -3  # recorded runs: apart from the app's own (1, 2, …)


def operations() -> list[StoreInput]:
    qwen = "qwen3-0.6b-2x"
    sync_steps = ("save the image on dgx5", "load on dgx1, dgx2", "re-attach the digest")
    prefill = Flag(FlagKind.PREFILL_IN_DECODE, "a cold prefill ran inside the decode window")
    sync = [
        Planned(op="sync", lane=qwen, cluster="2nodes-dac", ts=T0 - 50, steps=sync_steps),
        StepStarted(
            op="sync", lane=qwen, cluster="2nodes-dac", ts=T0 - 40, step="load", node="dgx1"
        ),
        Progress(
            op="sync",
            lane=qwen,
            cluster="2nodes-dac",
            ts=T0 - 2,
            step="load on dgx1",
            done=6.2,
            total=14.2,
            unit="GiB",
            message="480 MiB/s",
        ),
    ]
    launch = [
        Planned(op="launch", lane=LANE, cluster=CLUSTER, ts=T0 - 900, steps=("preflight",)),
        Finished.done("launch", "serving on dgx5-8 in 7m12s", lane=LANE, cluster=CLUSTER),
    ]
    bench = [
        Planned(op="bench", lane=LANE, cluster=CLUSTER, ts=T0 - 200, steps=("depth sweep",)),
        _point(0, 1, 66.8, 4314.0),
        _point(0, 2, 73.0, 4402.0),
        _point(4096, 1, 61.0, 3990.0),
        _point(4096, 2, 52.1, 3900.0, (prefill,)),
        _point(8192, 1, 60.2, 3712.0),
    ]
    return [
        *(OpUpdate(SYNC_RUN, e) for e in sync),
        *(OpUpdate(LAUNCH_RUN, e) for e in launch),
        *(OpUpdate(BENCH_RUN, e) for e in bench),
    ]


def scene(inv: Inventory) -> list[StoreInput]:
    """Every fact of the scene, in arrival order."""
    return [*operations(), *node_samples(inv), *rank_logs(), *engine_samples()]


def real_engine(at: float = T0, prefix_caching: bool = True) -> list[StoreInput]:
    """The 4x lane's head answering as the real vLLM 0.32 server of the captures does: idle, then
    under load 10 s later (with prefix caching off when asked: the label flipped, no hits)."""
    out: list[StoreInput] = []
    for name, when in (("metrics_idle.txt", at), ("metrics_under_load.txt", at + 10)):
        text = _read(f"vllm-0.32-cpu/{name}")
        if not prefix_caching:
            text = text.replace('enable_prefix_caching="True"', 'enable_prefix_caching="False"')
        metrics = parse_metrics(text, at=when)
        if not prefix_caching:
            metrics = replace(metrics, prefix_cache_hits=0.0)
        out.append(EngineSampled(LANE, CLUSTER, metrics))
    return out
