"""Startup of the TUI to its first useful frame (the Nodes pane showing live nodes) on a simulated
fleet, plus the cost of one key under a flood of log lines.

    python benchmarks/tui_startup.py [--runs 3] [--nodes 8] [--write-results]

Each run starts a fresh process (`-c` child) so imports count: t0 is the child's start, the frame
is the first repaint in which a node is LIVE (`CockpitApp.first_useful_frame`). Headless Textual
(`run_test`) renders the same compositor frames a terminal would get.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHILD = r"""
import time
t0 = time.perf_counter()
import asyncio, json, sys
from pathlib import Path
from cockpit.config import load_inventory
from cockpit.ssh.inventory import pool_for
from cockpit.tui.app import CockpitApp
from cockpit.tui.feeds.fleet import FleetFeed
from cockpit.tui.settings import TuiSettings
imported = time.perf_counter()

async def main():
    inventory = load_inventory(Path(sys.argv[1]))
    async with pool_for(inventory) as pool:
        app = CockpitApp(inventory, feeds=[FleetFeed(inventory, pool)],
                         settings=TuiSettings(Path(sys.argv[2])), persist_theme=False)
        async with app.run_test(size=(160, 48)) as pilot:
            mounted = time.perf_counter()
            while app.first_useful_frame is None and time.perf_counter() - t0 < 60:
                await asyncio.sleep(0.01)
            print(json.dumps({"imports": imported - t0, "mounted": mounted - t0,
                              "first_useful_frame": (app.first_useful_frame or float("nan")) - t0}))
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


def run_child(code: str, *args: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()

    from cockpit.sim.fleet import SimFleet

    with tempfile.TemporaryDirectory(prefix="tui-startup-") as tmp:
        fleet = SimFleet(Path(tmp) / "fleet", args.nodes)
        with fleet:
            runs = []
            for _ in range(args.runs):
                run = run_child(CHILD, str(fleet.inventory_dir), str(Path(tmp) / "tui.toml"))
                runs.append({**run, **run_child(EMPTY_APP)})
    load = Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"
    keys = ("imports", "mounted", "first_useful_frame", "empty_textual_app_mounted")
    rows = {k: [r[k] for r in runs] for k in keys}
    lines = [
        "## TUI: startup to the first useful frame",
        "",
        f"`python benchmarks/tui_startup.py --runs {args.runs} --nodes {args.nodes}` "
        f"({datetime.now(UTC):%Y-%m-%d}, load average {load} on 2 cores)",
        "",
        f"{args.nodes} simulated nodes over SSH; fresh process per run; seconds from the process "
        "start (imports included) to: the imports done, the app mounted, the first repaint "
        "showing a LIVE node (GPU and memory figures from the node's probe). The last row is "
        "an empty Textual app (one Static) started the same way: the floor on this machine.",
        "",
        "| seconds from process start | median | min | max |",
        "|---|---:|---:|---:|",
    ]
    for name, values in rows.items():
        lines.append(
            f"| {name.replace('_', ' ')} | {statistics.median(values):.2f} | {min(values):.2f} "
            f"| {max(values):.2f} |"
        )
    text = "\n".join(lines)
    print(text)
    if args.write_results:
        results = ROOT / "benchmarks" / "RESULTS.md"
        begin, end = "<!-- tui_startup:begin -->", "<!-- tui_startup:end -->"
        current = results.read_text(encoding="utf-8") if results.exists() else ""
        block = f"{begin}\n{text}\n{end}"
        if begin in current:
            head, rest = current.split(begin, 1)
            current = head + block + rest.split(end, 1)[1]
        else:
            current = current.rstrip("\n") + "\n\n" + block + "\n"
        results.write_text(current, encoding="utf-8")


if __name__ == "__main__":
    main()
