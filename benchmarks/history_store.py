"""What the history store costs: the UI loop's share per recorded item, the disk per day of
figures, and the queries `cockpit history` runs.

1. `Recorder.observe` of an operation's event and `Recorder.sample` of one frame's readings
   (8 nodes, 2 lanes), the calls the TUI makes on its event loop: microseconds each.
2. A day of figures for `--nodes` nodes and `--lanes` lanes (one lane row per 10 s, one node row
   per 30 s), written through the writer thread as a cockpit would: the rows, the seconds the
   writer took, and the file's size.
3. `cockpit history lane L --since 1d` and `ops --since 7d`'s queries on that store.

    python benchmarks/history_store.py [--nodes 8] [--lanes 2] [--write-results]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.results_md import write_section  # noqa: E402
from cockpit.events import Progress  # noqa: E402
from cockpit.history.downsample import Reading  # noqa: E402
from cockpit.history.recorder import LANE_SPAN_S, NODE_SPAN_S, Recorder  # noqa: E402
from cockpit.history.records import LaneSample, NodeSample, OpRow  # noqa: E402
from cockpit.history.store import HistoryStore  # noqa: E402
from cockpit.history.writer import Writer  # noqa: E402

DAY_S = 86400


def loop_cost(folder: Path, nodes: int, lanes: int) -> tuple[float, float]:
    """µs per `observe` of a progress event, µs per `sample` of one frame."""
    recorder = Recorder(Writer(folder / "loop.db", None))
    events = [Progress(op="sync", lane="l", cluster="c", step="transfer", node="dgx1", done=i)
              for i in range(20_000)]  # fmt: skip
    start = time.perf_counter()
    for event in events:
        recorder.observe(1, event)
    observe_us = (time.perf_counter() - start) / len(events) * 1e6
    frames = []
    for i in range(5000):
        at = 1_800_000_000.0 + i
        engine = {"gen_tps": 40.0, "prompt_tps": 900.0, "kv_usage": 0.3, "running": 2.0,
                  "waiting": 0.0}  # fmt: skip
        gpu = {"gpu_util": 90.0, "temp_c": 60.0, "power_w": 95.0, "mem_used_mib": 6e4,
               "mem_total_mib": 1.2e5}  # fmt: skip
        frames.append((
            [Reading((f"lane{k}", "c"), at, engine) for k in range(lanes)],
            [Reading((f"dgx{k}",), at, gpu) for k in range(nodes)],
            at,
        ))  # fmt: skip
    start = time.perf_counter()
    for lane_readings, node_readings, at in frames:
        recorder.sample(lane_readings, node_readings, at)
    sample_us = (time.perf_counter() - start) / len(frames) * 1e6
    recorder.close()
    return observe_us, sample_us


def a_day(path: Path, nodes: int, lanes: int) -> tuple[int, float]:
    """A day of figures through one writer; (rows, seconds until all were written)."""
    writer = Writer(path, None, queue_max=10**7)
    t0 = 1_800_000_000.0
    rows: list[object] = []
    for k in range(lanes):
        rows += [LaneSample(f"lane{k}", "c", t0 + s, LANE_SPAN_S, 5, 40.0, 900.0, 0.3, 0.4,
                            2.0, 0.0, 1.0) for s in range(0, DAY_S, int(LANE_SPAN_S))]  # fmt: skip
    for k in range(nodes):
        rows += [NodeSample(f"dgx{k}", t0 + s, NODE_SPAN_S, 6, 90.0, 60.0, 61.0, 95.0, 6e4,
                            1.2e5) for s in range(0, DAY_S, int(NODE_SPAN_S))]  # fmt: skip
    rows += [OpRow(f"op{i}", "launch", "lane0", "c", "ops@pluto", 1, t0 + 600 * i)
             for i in range(100)]  # fmt: skip
    start = time.perf_counter()
    for row in rows:
        writer.put(row)  # type: ignore[arg-type]
    writer.close(600)
    return len(rows), time.perf_counter() - start


def queries(path: Path) -> tuple[float, float]:
    store = HistoryStore.open(path)
    try:
        times = {"lane": [], "ops": []}
        for _ in range(20):
            start = time.perf_counter()
            store.lane_samples("lane0", 0)
            times["lane"].append(time.perf_counter() - start)
            start = time.perf_counter()
            store.ops(0)
            times["ops"].append(time.perf_counter() - start)
        return statistics.median(times["lane"]) * 1e3, statistics.median(times["ops"]) * 1e3
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--lanes", type=int, default=2)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        observe_us, sample_us = loop_cost(folder, args.nodes, args.lanes)
        path = folder / "day.db"
        rows, seconds = a_day(path, args.nodes, args.lanes)
        size = sum(p.stat().st_size for p in folder.glob("day.db*"))
        lane_ms, ops_ms = queries(path)
    lines = [
        f"`python benchmarks/history_store.py --nodes {args.nodes} --lanes {args.lanes}` "
        f"({date.today()})",
        "",
        f"- on the UI loop: {observe_us:.1f} µs an operation event recorded, {sample_us:.1f} µs "
        f"a frame's figures ({args.nodes} nodes, {args.lanes} lanes)",
        f"- a day of figures: {rows:,} rows written by the writer thread in {seconds:.2f} s, "
        f"{size / 2**20:.1f} MiB on disk ({size / rows:.0f} B a row)",
        f"- queries: a lane's day {lane_ms:.1f} ms, 100 operations {ops_ms:.2f} ms (median of 20)",
    ]
    text = "## History store: what it costs\n\n" + "\n".join(lines)
    print(text)
    if args.write_results:
        write_section("history_store", text)


if __name__ == "__main__":
    main()
