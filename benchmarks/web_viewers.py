"""The web view's connections to the nodes with 1, 4 and 8 viewers.

    python benchmarks/web_viewers.py [--nodes 4] [--viewers 1 4 8] [--write-results]

A simulated fleet over SSH and `cockpit serve` as a process on it (loopback). Viewers are
websockets opened as the page opens them, no browser (`tests/tui/served.py: Viewer`): each makes
the server start a read-only TUI process, as a browser's does. Viewers are added up to each
count and kept open; once every viewer shows every node's live row, the established TCP
connections to each node's SSH address are counted from /proc/net/tcp (whoever opened them: the
serve process's shared feed, an app process, anything) when they stayed the same for 3 s. Then
the resident memory of the server process and of its app processes.

The same again with textual-serve itself serving `cockpit tui --readonly` (what `cockpit serve`
ran before the shared feed: each session its own feed and SSH pool), for comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.results_md import write_section  # noqa: E402
from cockpit_sim.fleet import SimFleet  # noqa: E402
from tests.tui.served import (  # noqa: E402
    Viewer,
    apps,
    free_port,
    kill_group,
    serve_argv,
    ssh_connections,
    start_in_session,
    wait_port,
)

SHARED, PER_SESSION = "shared feed", "a feed per session"
SERVERS = (SHARED, PER_SESSION)
SETTLE_S = 3.0
SHOWN_S = 120.0
PLAIN_SERVE = (  # textual-serve serving a command, nothing of cockpit's around it
    "import sys; from textual_serve.server import Server; "
    "Server(sys.argv[1], host=sys.argv[2], port=int(sys.argv[3])).serve()"
)


def plain_serve_argv(fleet: SimFleet, port: int) -> list[str]:
    own_feed = shlex.join(
        [sys.executable, "-m", "cockpit", "--inventory", str(fleet.root), "tui", "--readonly"]
    )
    return [sys.executable, "-c", PLAIN_SERVE, own_feed, "127.0.0.1", str(port)]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def steady(fleet: SimFleet) -> dict[str, int]:
    """Each node's connections once they held for SETTLE_S."""
    seen = ssh_connections(fleet)
    still = time.monotonic()
    while time.monotonic() - still < SETTLE_S:
        await asyncio.sleep(0.5)
        now = ssh_connections(fleet)
        if now != seen:
            seen, still = now, time.monotonic()
    return seen


async def measure(
    fleet: SimFleet, server: subprocess.Popen[bytes], base: str, counts: list[int]
) -> list[dict[str, float]]:
    """Viewers added up to each of `counts`: one row of figures at each."""
    nodes = [n.name for n in fleet.nodes]
    viewers: list[Viewer] = []
    rows = []
    try:
        for count in counts:
            started = time.monotonic()
            added = [await Viewer.open(base) for _ in range(count - len(viewers))]
            viewers += added
            for viewer in added:
                await viewer.shows_nodes(nodes, SHOWN_S)
            shown = time.monotonic() - started
            per_node = await steady(fleet)
            served = apps(server)
            rows.append(
                {
                    "viewers": count,
                    "apps": len(served),
                    "min": min(per_node.values()),
                    "max": max(per_node.values()),
                    "total": sum(per_node.values()),
                    "shown_s": shown,
                    "serve_mib": rss_mib(server.pid),
                    "app_mib": statistics.median(rss_mib(pid) for pid in served),
                }
            )
            print(rows[-1], file=sys.stderr)
    finally:
        for viewer in viewers:
            await viewer.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--viewers", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()

    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="web-viewers-") as tmp:
        env = {
            **os.environ,
            "XDG_CONFIG_HOME": f"{tmp}/config",
            "COCKPIT_STATE_DIR": f"{tmp}/state",
            "HOME": f"{tmp}/home",
        }
        env.pop("COCKPIT_INVENTORY", None)
        rows: dict[str, list[dict[str, float]]] = {}
        with SimFleet(Path(tmp) / "fleet", args.nodes) as fleet:
            for name in SERVERS:
                port = free_port()
                argv = (
                    serve_argv(fleet, f"127.0.0.1:{port}", "--max-viewers", str(max(args.viewers)))
                    if name == SHARED
                    else plain_serve_argv(fleet, port)
                )
                server = start_in_session(Path(tmp) / "serve.log", argv, env)
                try:
                    wait_port(port, server, 60)
                    base = f"http://127.0.0.1:{port}"
                    rows[name] = asyncio.run(measure(fleet, server, base, args.viewers))
                finally:
                    kill_group(server)
    lines = [
        "## Web view: connections to the nodes by number of viewers",
        "",
        f"`python benchmarks/web_viewers.py --nodes {args.nodes} --viewers "
        f"{' '.join(map(str, args.viewers))}` ({datetime.now(UTC):%Y-%m-%d}, 1-min load "
        f"average {load_before:.2f} at the start, {os.cpu_count()} cores)",
        "",
        f"{args.nodes} simulated nodes over SSH, `cockpit serve` on loopback; viewers are "
        "websockets opened as the page opens them (each starts a read-only TUI process, as a "
        "browser's does), added up to each count and kept open. Connections: established TCP "
        "connections to each node's SSH address, from anyone, once every viewer shows every "
        "node's live row and the counts held for 3 s. *shared feed*: `cockpit serve`, every "
        "session reading the serve process's one feed. *a feed per session*: textual-serve "
        "itself serving `cockpit tui --readonly`, what `cockpit serve` ran before (each "
        "session its own feed and SSH connections).",
        "",
        "| serving | viewers | app processes | connections per node (min-max) | all nodes | "
        "s to the new viewers' rows | server RSS MiB | app RSS MiB (median) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, measured in rows.items():
        for row in measured:
            lines.append(
                f"| {name} | {row['viewers']} | {row['apps']} | {row['min']}-{row['max']} | "
                f"{row['total']} | {row['shown_s']:.1f} | {row['serve_mib']:.0f} | "
                f"{row['app_mib']:.0f} |"
            )
    shared, own = rows[SHARED][-1], rows[PER_SESSION][-1]
    lines += [
        "",
        f"With {shared['viewers']} viewers: {shared['total']} connections to the nodes in all "
        f"against {own['total']}; the server {shared['serve_mib'] - own['serve_mib']:+.0f} MiB "
        "(it runs the feed and its SSH pool), each app "
        f"{shared['app_mib'] - own['app_mib']:+.0f} MiB (no SSH of its own).",
    ]
    text = "\n".join(lines)
    print(text)
    if args.write_results:
        write_section("web_viewers", text)


if __name__ == "__main__":
    main()
