"""Startup of the TUI to its first useful frame (the Nodes pane showing live nodes) on a simulated
fleet.

    python benchmarks/tui_startup.py [--runs 3] [--nodes 8] [--write-results]

Each run starts a fresh process (`-c` child) that takes the path of `cockpit tui`: the CLI modules,
the inventory, the SSH pool, then `cockpit.tui.launch.fleet_app` (probes started before Textual is
imported), the app run headless (`run_test` renders the same compositor frames a terminal gets).
t0 is the child's start; the frame is the first one painted with a LIVE node showing its GPU and
memory figures (`CockpitApp.first_useful_frame`).

cockpit's own modules are byte-compiled first (`compileall`, as `pip install` does): this sandbox
sets PYTHONDONTWRITEBYTECODE, which would otherwise recompile them from source on every start.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.results_md import write_section  # noqa: E402

CHILD = r"""
import time
t0 = time.perf_counter()
import asyncio, json, sys
from pathlib import Path
from cockpit.startup import pause_collector
pause_collector()  # as cockpit's entry point does
import cockpit.cli.main
from cockpit_sim.engine.text import TOKENIZER_DIR
from cockpit.config import load_inventory
from cockpit.ssh.inventory import pool_for
from cockpit.tui.launch import fleet_app
from cockpit.tui.settings import TuiSettings

async def main():
    inventory = load_inventory(Path(sys.argv[1]))
    settings = TuiSettings(Path(sys.argv[2]) / "tui.toml")
    async with pool_for(inventory) as pool:
        probing = time.perf_counter()
        async with fleet_app(inventory, pool, settings, reports_dir=Path(sys.argv[2]) / "reports",
                             tokenizer_dir=TOKENIZER_DIR, persist_theme=False) as app:
            built = time.perf_counter()
            async with app.run_test(size=(160, 48)) as pilot:
                mounted = time.perf_counter()
                while app.first_useful_frame is None and time.perf_counter() - t0 < 60:
                    await asyncio.sleep(0.01)
                frame = (app.first_useful_frame or float("nan")) - t0
                print(json.dumps({"probes_started": probing - t0, "app_built": built - t0,
                                  "mounted": mounted - t0, "first_useful_frame": frame,
                                  "cpu_seconds": time.process_time()}))
                app.exit()

asyncio.run(main())
"""


EMPTY_APP = r"""
import time
t0 = time.perf_counter()
import asyncio, json
from textual.app import App
from textual.widgets import Static

class Empty(App):
    def compose(self):
        yield Static("hello")

async def main():
    async with Empty().run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        print(json.dumps({"empty_textual_app_mounted": time.perf_counter() - t0}))

asyncio.run(main())
"""


def run_child(code: str, *args: str, cpus: set[int] | None = None) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
        preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def load_average() -> str:
    loadavg = Path("/proc/loadavg")
    return loadavg.read_text().split()[0] if loadavg.exists() else "?"


def pin(pid: int, cpus: set[int]) -> None:
    """Every thread of the fleet daemon (the processes it spawns later inherit it)."""
    for task in os.listdir(f"/proc/{pid}/task"):
        os.sched_setaffinity(int(task), cpus)


KEYS = (
    "probes_started",
    "app_built",
    "mounted",
    "first_useful_frame",
    "cpu_seconds",
    "empty_textual_app_mounted",
)
RATIO = "first_useful_frame_÷_empty_app"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()

    from cockpit_sim.fleet import SimFleet

    compileall.compile_dir(ROOT / "cockpit", quiet=1)
    load_before = load_average()
    everything = os.sched_getaffinity(0)
    fleet_cpu = max(everything)
    placements = {
        "shared": (everything, everything),
        "apart": ({fleet_cpu}, everything - {fleet_cpu}),
    }
    if len(everything) < 2:
        del placements["apart"]
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in placements}
    with tempfile.TemporaryDirectory(prefix="tui-startup-") as tmp:
        fleet = SimFleet(Path(tmp) / "fleet", args.nodes)
        with fleet:
            daemon = fleet.pid()
            assert daemon is not None
            for _ in range(args.runs):  # placements alternate: both see the same machine load
                for name, (fleet_cpus, cockpit_cpus) in placements.items():
                    pin(daemon, fleet_cpus)
                    run = run_child(CHILD, str(fleet.inventory_dir), tmp, cpus=cockpit_cpus)
                    runs[name].append({**run, **run_child(EMPTY_APP, cpus=cockpit_cpus)})
    header = " | ".join(f"{name} median | min | max" for name in placements)
    lines = [
        "## TUI: startup to the first useful frame",
        "",
        f"`python benchmarks/tui_startup.py --runs {args.runs} --nodes {args.nodes}` "
        f"({datetime.now(UTC):%Y-%m-%d}, 1-min load average {load_before} at the start, on "
        f"{len(everything)} cores; the fleet's own bursts raise it during the runs)",
        "",
        f"{args.nodes} simulated nodes over SSH; fresh process per run taking the path of "
        "`cockpit tui`; seconds from the process start (imports included) to: the probes "
        "started (CLI, inventory and asyncssh loaded), the app built (Textual and the panes "
        "imported in a thread meanwhile), the app mounted, the first frame painted with a LIVE "
        "node showing GPU and memory figures from its probe; then the child's CPU seconds at "
        "that point. Then an empty Textual app (one Static) started the same way, the floor on "
        "this machine, and the first useful frame as a multiple of it (each run against the "
        "empty app measured right after it): the figure that compares across machines.",
        "",
        "*shared*: the fleet (its SSH server and every node tool it spawns) and the cockpit share "
        f"all {len(everything)} cores, as in `cockpit demo`. *apart*: the fleet pinned to CPU "
        f"{fleet_cpu}, the cockpit to the others, a stand-in for nodes that have their own CPUs. "
        "The two alternate run by run.",
        "",
        f"| seconds from process start | {header} |",
        "|---|" + "---:|---:|---:|" * len(placements),
    ]
    for name in placements:  # the machine-independent figure: how many empty apps' start-ups
        for run in runs[name]:
            run[RATIO] = run["first_useful_frame"] / run["empty_textual_app_mounted"]
    for key in (*KEYS, RATIO):
        cells = []
        for name in placements:
            values = [r[key] for r in runs[name]]
            cells.append(f"{statistics.median(values):.2f} | {min(values):.2f} | {max(values):.2f}")
        lines.append(f"| {key.replace('_', ' ')} | {' | '.join(cells)} |")
    text = "\n".join(lines)
    print(text)
    if args.write_results:
        write_section("tui_startup", text)


if __name__ == "__main__":
    main()
