"""What the TUI costs while nothing happens, and while a lane streams: CPU per second, in-process.

    python benchmarks/tui_idle_cpu.py [--seconds 20] [--clock scene|wall] [--root DIR]
    python benchmarks/tui_idle_cpu.py --write-results [--seconds 20]   # both clocks, to RESULTS

Set up as `tui_press_cpu.py` is: the tests' recorded scene (8 nodes, a MiMo lane serving, a sync
running, a bench table) at 160×48 under `App.run_test`, no fleet, no terminal. Idle: no input at
all for `--seconds`. Busy: a stub feed, every 100 ms 10 log lines for each of the lane's 4 ranks,
every 1 s a poll of the 8 nodes (GPU utilisation moving), every 2 s a scrape of the lane, for
`--seconds`. `--clock scene` keeps the app's clock at the scene's time (as the tests and
`tui_press_cpu.py` do: nothing ages); `wall` lets it run (ages tick, as in a real session).
`--root` measures another checkout (e.g. a worktree of main) with this same script.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if "--root" in sys.argv:
    ROOT = Path(sys.argv[sys.argv.index("--root") + 1]).resolve()
sys.path[:0] = [str(ROOT), str(ROOT / "sim")]

from benchmarks.results_md import write_section  # noqa: E402
from cockpit.tui.app import CockpitApp  # noqa: E402
from cockpit.tui.settings import TuiSettings  # noqa: E402
from cockpit.tui.state.inputs import EngineSampled, NodeSampled, RankLines, StoreInput  # noqa: E402
from tests.tui import scene  # noqa: E402

SIZE = (160, 48)
SETTLE_S = 1.0


class Streaming:
    """A lane serving and logging: the feed waits for `on`, then streams."""

    name = "streaming"

    def __init__(self, on: asyncio.Event, wall: bool) -> None:
        self.on = on
        self.wall = wall  # inputs stamped with the wall clock, else the scene's time

    async def batches(self) -> AsyncIterator[Sequence[StoreInput]]:
        last = {
            s.node: s for s in scene.node_samples(scene.inventory()) if isinstance(s, NodeSampled)
        }
        engine = [e for e in scene.engine_samples() if isinstance(e, EngineSampled)][-1].metrics
        await self.on.wait()
        k = 0
        while True:
            k += 1
            at = time.time() if self.wall else scene.T0
            batch: list[StoreInput] = []
            if k % 10 == 0:
                for i, s in enumerate(last.values()):
                    gpu = (
                        replace(s.gpu, utilization_pct=float((k * 7 + i * 13) % 100))
                        if s.gpu
                        else None
                    )
                    batch.append(replace(s, at=at, gpu=gpu))
            for rank, node in enumerate(scene.BENCH_NODES):
                text = tuple(
                    f"(APIServer pid=1) INFO line {k}.{j} of rank {rank}" for j in range(10)
                )
                batch.append(RankLines(node, scene.LANE, scene.CLUSTER, rank, text, at))
            if k % 20 == 0:
                m = replace(
                    engine,
                    at=engine.at + k / 10,
                    generation_tokens=(engine.generation_tokens or 0) + 100 * k,
                    prompt_tokens=(engine.prompt_tokens or 0) + 1000 * k,
                )
                batch.append(EngineSampled(scene.LANE, scene.CLUSTER, m))
            yield batch
            await asyncio.sleep(0.1)


async def measure(seconds: float, wall: bool) -> tuple[float, float]:
    """(idle, busy) CPU ms per wall second."""
    inventory = scene.inventory()
    settings = TuiSettings(Path(tempfile.mkdtemp()) / "tui.toml", None, {})
    on = asyncio.Event()
    feed = Streaming(on, wall)
    app = CockpitApp(inventory, settings=settings, baselines=scene.baselines(), feeds=[feed],
                     clock=time.time if wall else (lambda: scene.T0),
                     fleet_label="recorded scene")  # fmt: skip
    app.store.apply_all(scene.scene(inventory))
    out = []
    async with app.run_test(size=SIZE) as pilot:
        for start in (None, on):
            if start is not None:
                start.set()
            await pilot.pause(SETTLE_S)
            c0, t0 = time.process_time(), time.perf_counter()
            await pilot.pause(seconds)
            out.append(1000 * (time.process_time() - c0) / (time.perf_counter() - t0))
    return out[0], out[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--clock", choices=("scene", "wall"), default="scene")
    parser.add_argument("--root", help="the checkout to measure (default: this one)")
    parser.add_argument(
        "--write-results", action="store_true", help="both clocks, as a RESULTS.md section"
    )
    args = parser.parse_args()
    if not args.write_results:
        idle, busy = asyncio.run(measure(args.seconds, args.clock == "wall"))
        print(f"{ROOT}: clock {args.clock}: idle {idle:.1f}, busy {busy:.1f} ms CPU a second")
        return
    figures = {
        clock: asyncio.run(measure(args.seconds, clock == "wall")) for clock in ("scene", "wall")
    }
    text = "\n".join([
        "## TUI: what it costs while nothing happens, and while a lane streams",
        "",
        f"`python benchmarks/tui_idle_cpu.py --write-results --seconds {args.seconds:g}` "
        f"({date.today()}): the recorded scene at {SIZE[0]}×{SIZE[1]} in-process; *busy* is a "
        "stub feed sending 40 log lines every 100 ms, a poll of the 8 nodes a second and a scrape "
        "every 2 s; *scene* clock: frozen at the scene's time (nothing ages), *wall*: the real "
        "clock (ages tick). ms of CPU a second:",
        "",
        "| clock | idle | busy |",
        "|---|---:|---:|",
        *(f"| {clock} | {idle:.1f} | {busy:.1f} |" for clock, (idle, busy) in figures.items()),
    ])  # fmt: skip
    print(text)
    write_section("tui_idle_cpu", text)


if __name__ == "__main__":
    main()
