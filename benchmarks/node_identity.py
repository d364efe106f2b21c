"""What the simulated nodes' identity costs: a fleet whose nodes live in namespaces against the same
fleet in wrappers-only mode (no namespaces: the baseline), measured in the same run.

    python benchmarks/node_identity.py [--nodes 64] [--sessions 200] [--runs 3] [--write-results]

Per mode: `sim up` to ready (provisioning, the namespace holders, the endpoints), the wall time
of one SSH session (`true`, sequential, one connection: the endpoint's spawn, nsenter, bash),
the CPU the fleet spent in all (daemon, holders, sessions: what this process reaped), and
`SimFleet.stop`. Both modes write the identity files at provisioning; what that costs is measured
apart: provisioning a fleet with them against the same provisioning without them. Runs alternate
the modes; each figure is the median of its runs (the machine is shared: a lone run swings with
its neighbours' load).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import asyncssh

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.procstat import children_cpu, process_cpu  # noqa: E402
from benchmarks.results_md import write_section  # noqa: E402
from cockpit_sim.fleet import SimFleet, provision  # noqa: E402
from cockpit_sim.fleet.control import PROJECT_RECIPES  # noqa: E402
from cockpit_sim.fleet.layout import FleetConfig, FleetLayout  # noqa: E402

MODES = ("wrappers", "namespaces")


async def sessions(fleet: SimFleet, count: int) -> tuple[float, float]:
    """Mean wall seconds of one `true` session on dgx1, and the daemon's CPU seconds for it
    (its own and its sessions': the endpoint, nsenter, bash)."""
    node = fleet.nodes[0]
    async with asyncssh.connect(
        node.host,
        node.port,
        username=fleet.config.user,
        client_keys=[str(fleet.client_key)],
        known_hosts=str(fleet.known_hosts),
    ) as conn:
        await conn.run("true", check=True)
        daemon = fleet.pid()
        assert daemon is not None
        cpu, started = process_cpu(daemon), time.perf_counter()
        for _ in range(count):
            await conn.run("true", check=True)
        return (time.perf_counter() - started) / count, (process_cpu(daemon) - cpu) / count


def measure(mode: str, nodes: int, count: int) -> dict[str, float]:
    cpu = children_cpu()
    with tempfile.TemporaryDirectory(prefix="bench-identity-") as tmp:
        fleet = SimFleet(Path(tmp) / "fleet", nodes, identity=mode)
        started = time.perf_counter()
        fleet.start(timeout=300)
        up = time.perf_counter() - started
        try:
            assert fleet.identity_mode == mode, fleet.identity_mode
            session, session_cpu = asyncio.run(sessions(fleet, count))
        finally:
            started = time.perf_counter()
            fleet.stop()
            down = time.perf_counter() - started
    return {"up": up, "session": session, "session_cpu": session_cpu,
            "cpu": children_cpu() - cpu, "down": down}  # fmt: skip


def provisioning(nodes: int, identity: bool) -> float:
    """Seconds per node to provision a fleet (keys, state, snapshots), with or without identity."""
    real = provision.write_identity
    if not identity:
        provision.write_identity = lambda *args, **kwargs: None  # type: ignore[assignment]
    try:
        with tempfile.TemporaryDirectory(prefix="bench-provision-") as tmp:
            config = FleetConfig(nodes=nodes, recipes_dir=str(PROJECT_RECIPES))
            started = time.perf_counter()
            provision.provision(FleetLayout(Path(tmp)), config)
            return (time.perf_counter() - started) / nodes
    finally:
        provision.write_identity = real


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    files: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(args.runs):
        for mode in MODES:
            runs[mode].append(measure(mode, args.nodes, args.sessions))
        for identity in files:
            files[identity].append(provisioning(args.nodes, identity))
    bare, full = (statistics.median(files[i]) * 1000 for i in (False, True))
    base, ns = ({k: statistics.median(r[k] for r in runs[m]) for k in runs[m][0]} for m in MODES)
    rows = [
        ("`sim up` to ready (s)", "up", "{:.2f}"),
        ("one SSH session `true` (ms)", "session", "{:.1f}"),
        ("its CPU on the fleet (ms)", "session_cpu", "{:.1f}"),
        ("fleet CPU in all (s)", "cpu", "{:.2f}"),
        ("`stop` (s)", "down", "{:.2f}"),
    ]
    scale = {"session": 1000.0, "session_cpu": 1000.0}
    lines = [
        "## Node identity: namespaces vs wrappers only",
        "",
        f"`python benchmarks/node_identity.py --nodes {args.nodes} --sessions {args.sessions} "
        f"--runs {args.runs}` ({datetime.now(UTC):%Y-%m-%d})",
        "",
        f"{args.nodes} nodes (asyncssh), {args.sessions} sequential sessions on one connection; "
        f"the fleet CPU covers start, the sessions and stop; medians of {args.runs} runs; "
        f"load average {load_before:.1f} → {os.getloadavg()[0]:.1f} on this shared machine "
        "(wall times and provisioning swing with it; CPU times less).",
        "",
        "| | wrappers only | namespaces | namespaces / wrappers |",
        "|---|---:|---:|---:|",
    ]
    for label, key, fmt in rows:
        k = scale.get(key, 1.0)
        lines.append(
            f"| {label} | {fmt.format(base[key] * k)} | {fmt.format(ns[key] * k)} | "
            f"{ns[key] / base[key]:.2f}× |"
        )
    lines += [
        "",
        "| provisioning per node (ms) | without identity files | with them | with / without |",
        "|---|---:|---:|---:|",
        f"| keys, state, snapshots (+ identity) | {bare:.1f} | {full:.1f} | {full / bare:.2f}× |",
    ]
    text = "\n".join(lines)
    print(text)
    if args.write_results:
        write_section("node_identity", text)


if __name__ == "__main__":
    main()
