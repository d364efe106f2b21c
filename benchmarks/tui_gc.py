"""What the garbage collector costs the TUI while a lane streams: the objects it tracks and its
pauses, with the tables' render caches bounded (as shipped) and at Textual's sizes (the baseline,
measured in the same run).

    python benchmarks/tui_gc.py [--seconds 60] [--rounds 2] [--write-results]

Set up as `tui_idle_cpu.py`'s busy scene (the tests' recorded scene at 160×48 under
`App.run_test`, a stub feed of 400 log lines a second, a poll of the 8 nodes a second, a scrape
every 2 s, the wall clock), the start-up's objects frozen as `cockpit`'s entry point does
(`cockpit/startup.py`). Each collection is timed by `gc.callbacks` in CPU time of the loop's
thread (wall time would count what other processes take of the cores meanwhile); a full
collection (gen 2) walks every tracked object, and the loop waits for it: a key pressed meanwhile
waits too. Each variant runs in a fresh process, taking turns, `--rounds` times.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "sim")]

from benchmarks.results_md import write_section  # noqa: E402
from benchmarks.tui_idle_cpu import SIZE, Streaming  # noqa: E402
from cockpit.tui.app import CockpitApp  # noqa: E402
from cockpit.tui.settings import TuiSettings  # noqa: E402
from cockpit.tui.widgets.bounded import BoundedTable  # noqa: E402
from tests.tui import scene  # noqa: E402

SETTLE_S = 1.5


@dataclass
class Pauses:
    """Collection pauses by generation, in ms."""

    ms: dict[int, list[float]] = field(default_factory=lambda: {0: [], 1: [], 2: []})
    started: float = 0.0
    on: bool = False

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self.started = time.thread_time()
        elif self.on:
            self.ms[info["generation"]].append(1000 * (time.thread_time() - self.started))


async def measure(seconds: float, bounded: bool) -> tuple[int, Pauses, float]:
    """(tracked objects at the end, the pauses, CPU ms a second) over `seconds` of streaming."""
    if not bounded:  # Textual's own cache sizes: the tables' caches left as DataTable made them
        BoundedTable._bound = lambda self, height: None  # type: ignore[method-assign]
    inventory = scene.inventory()
    settings = TuiSettings(Path(tempfile.mkdtemp()) / "tui.toml", None, {})
    on = asyncio.Event()
    app = CockpitApp(inventory, settings=settings, baselines=scene.baselines(),
                     feeds=[Streaming(on, wall=True)], clock=time.time,
                     fleet_label="recorded scene")  # fmt: skip
    app.store.apply_all(scene.scene(inventory))
    pauses = Pauses()
    gc.callbacks.append(pauses)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(SETTLE_S)
        gc.freeze()  # as `cockpit` does once the TUI is up (cockpit/startup.py)
        on.set()
        pauses.on = True
        c0, t0 = time.process_time(), time.perf_counter()
        await pilot.pause(seconds)
        cpu = 1000 * (time.process_time() - c0) / (time.perf_counter() - t0)
        pauses.on = False
        tracked = len(gc.get_objects())
    return tracked, pauses, cpu


def one(seconds: float, bounded: bool) -> dict[str, object]:
    tracked, pauses, cpu = asyncio.run(measure(seconds, bounded))
    return {"tracked": tracked, "full": pauses.ms[2], "young": pauses.ms[0] + pauses.ms[1],
            "cpu": cpu}  # fmt: skip


def in_fresh_process(seconds: float, bounded: bool) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, __file__, "--seconds", str(seconds), "--one", str(int(bounded))],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(done.stdout.splitlines()[-1])


def row(name: str, runs: list[dict[str, object]]) -> str:
    """Medians over the runs of the per-run figures (the full collections' pooled)."""
    full = [ms for r in runs for ms in r["full"]]  # type: ignore[attr-defined]
    young = [ms for r in runs for ms in r["young"]]  # type: ignore[attr-defined]

    def med(key: str) -> float:
        return statistics.median(float(r[key]) for r in runs)  # type: ignore[arg-type]

    per_run = statistics.median(sum(r["full"]) + sum(r["young"]) for r in runs)  # type: ignore[arg-type]
    return (
        f"| {name} | {med('tracked'):,.0f} | {len(full) / len(runs):.1f} | "
        f"{statistics.median(full) if full else 0:.1f} | {max(full, default=0):.1f} | "
        f"{max(young, default=0):.1f} | {per_run:.0f} | {med('cpu'):.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--one", type=int, choices=(0, 1), help=argparse.SUPPRESS)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    if args.one is not None:  # one variant in this process: its figures as one JSON line
        print(json.dumps(one(args.seconds, bool(args.one))))
        return
    runs: dict[bool, list[dict[str, object]]] = {True: [], False: []}
    for _ in range(args.rounds):
        for bounded in (True, False):
            runs[bounded].append(in_fresh_process(args.seconds, bounded))
    ratio = statistics.median(float(r["tracked"]) for r in runs[True]) / statistics.median(  # type: ignore[arg-type]
        float(r["tracked"])
        for r in runs[False]  # type: ignore[arg-type]
    )
    text = "\n".join([
        "## TUI: what the garbage collector costs while a lane streams",
        "",
        f"`python benchmarks/tui_gc.py --seconds {args.seconds:g} --rounds {args.rounds}` "
        f"({date.today()}): the recorded scene at {SIZE[0]}×{SIZE[1]} in-process with "
        f"`tui_idle_cpu.py`'s busy feed for {args.seconds:g} s, start-up's objects frozen; the "
        "Lanes and Nodes tables' render caches bounded to their height (as shipped) against "
        "Textual's sizes (1,000 lines and rows, 10,000 cells), each in a fresh process, taking "
        f"turns, {args.rounds} runs each. Collections in CPU ms of the loop's thread; full "
        "collections pooled over the runs, the rest medians of the runs.",
        "",
        "| tables' caches | tracked objects at the end | full collections a run | median ms "
        "| max ms | max young ms | all collections ms a run | CPU ms a second |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        row("bounded (shipped)", runs[True]),
        row("Textual's sizes", runs[False]),
        "",
        f"Tracked objects, bounded ÷ Textual's: {ratio:.2f}.",
    ])  # fmt: skip
    print(text)
    if args.write_results:
        write_section("tui_gc", text)


if __name__ == "__main__":
    main()
