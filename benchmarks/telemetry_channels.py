"""Telemetry over one long-lived channel per node vs one exec per poll, on real OpenSSH sshd.

Starts a simulated fleet whose nodes are Debian OpenSSH sshd processes, then collects the same
facts at the same pace both ways for a fixed window:
  stream  the `cockpit status` probe: `nvidia-smi -lms` + a bash loop, one SSH channel per node
  exec    one `run` per fact and per poll (GPU every gpu-ms; meminfo, containers, compute apps
          every slow-s; the image inventory every images-every slow cycles)
and measures
  - remote processes spawned: `perf stat` counts sched_process_fork (tasks created) and
    sched_process_exec (programs started) in every node's sshd and all its descendants;
  - cockpit CPU: this process's user+system time (resource.getrusage) over the window;
  - GPU samples received, to show both ways deliver the same data.
Prints a table and the exec/stream ratios; `--write-results` records them in RESULTS.md.

    .venv/bin/python benchmarks/telemetry_channels.py --nodes 4 --window 60
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.results_md import write_section
from cockpit.ssh import Endpoint, Settings, SshError, SshPool
from cockpit.status.poller import FleetPoller
from cockpit.status.probe import (
    APPS_QUERY,
    GPU_QUERY,
    IMAGES_QUERY,
    MEMINFO_QUERY,
    PS_QUERY,
    NodeFacts,
    Pace,
    ProbeParser,
    Section,
)
from cockpit_sim.fleet import SimFleet

SETTLE_S = 3.0
PERF_ATTEMPTS = 10
PERF_ATTACH_S = 0.3
PERF_EVENTS = "sched:sched_process_fork,sched:sched_process_exec"


@dataclass(frozen=True)
class Measure:
    mode: str
    nodes: int
    window_s: float
    forks: int
    execs: int
    cpu_s: float
    gpu_samples: int

    def per_node_minute(self, value: float) -> float:
        return value / self.nodes / (self.window_s / 60.0)


class ExecPoller:
    """The baseline: every fact fetched by its own exec at the probe's pace."""

    def __init__(self, pool: SshPool, nodes: list[str], pace: Pace) -> None:
        self._pool, self._nodes, self._pace = pool, nodes, pace
        self.facts = {n: NodeFacts() for n in nodes}
        self.errors: list[str] = []
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        for node in self._nodes:
            self._tasks.append(asyncio.create_task(self._gpu(node)))
            self._tasks.append(asyncio.create_task(self._slow(node)))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _every(self, period: float, poll: Callable[[], Awaitable[None]]) -> None:
        next_at = time.monotonic()
        while True:
            try:
                await poll()
            except SshError as exc:
                self.errors.append(str(exc))
            next_at += period
            await asyncio.sleep(max(next_at - time.monotonic(), 0.0))

    async def _gpu(self, node: str) -> None:
        async def poll() -> None:
            result = await self._pool.run(node, GPU_QUERY, timeout=10)
            if not result.ok:
                self.errors.append(f"{node}: gpu exit {result.exit_status}: {result.stderr[-200:]}")
            parser = ProbeParser()
            for line in result.stdout.splitlines():
                frame = parser.feed(f"gpu\t{line}")
                if frame is not None:
                    self.facts[node] = self.facts[node].with_frame(frame, time.time())

        await self._every(self._pace.gpu_ms / 1000, poll)

    async def _slow(self, node: str) -> None:
        cycle = 0

        async def fetch(tag: str, command: str | list[str]) -> None:
            result = await self._pool.run(node, command, timeout=30)
            frame = Section(tag, result.stdout, result.exit_status)
            self.facts[node] = self.facts[node].with_frame(frame, time.time())

        async def poll() -> None:
            nonlocal cycle
            await fetch("mem", MEMINFO_QUERY)
            await fetch("ps", PS_QUERY)
            await fetch("apps", APPS_QUERY)
            if cycle % max(self._pace.images_every, 1) == 0:
                await fetch("img", IMAGES_QUERY)
            cycle += 1

        await self._every(self._pace.slow_s, poll)


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _node_pids(fleet: SimFleet, min_age_s: float = 2.0) -> list[int]:
    """Every node's sshd listener and its long-lived descendants (connections, sessions, probe
    loops): perf follows the children they create from now on. Short-lived processes are left
    out, since perf refuses to start if one of its pids exits before it attaches."""
    roots = {int((fleet.root / "sshd" / f"{n}.pid").read_text()) for n in fleet.names}
    ticks = os.sysconf("SC_CLK_TCK")
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    parent: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if uptime - int(fields[19]) / ticks >= min_age_s:
                parent[int(stat.parent.name)] = int(fields[1])
    tree, grew = set(roots), True
    while grew:
        grew = False
        for pid, ppid in parent.items():
            if ppid in tree and pid not in tree:
                tree.add(pid)
                grew = True
    return sorted(tree)


class SpawnCounter:
    """`perf stat` on the nodes' long-lived processes and everything they start meanwhile:
    `async with SpawnCounter(pids_of) as counter: ...`, then `counter.tasks` / `.programs`."""

    def __init__(self, pids_of: Callable[[], list[int]]) -> None:
        self._pids_of = pids_of
        self._out = Path(tempfile.mkstemp(suffix=".perf")[1])
        self._perf: subprocess.Popen[str] | None = None
        self.tasks = self.programs = 0

    async def __aenter__(self) -> SpawnCounter:
        for _ in range(PERF_ATTEMPTS):  # perf gives up when a pid exits while it attaches
            pids = ",".join(map(str, self._pids_of()))
            self._perf = subprocess.Popen(
                ["perf", "stat", "-e", PERF_EVENTS, "-p", pids, "-o", str(self._out)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            await asyncio.sleep(PERF_ATTACH_S)
            if self._perf.poll() is None:
                return self
        raise RuntimeError(f"perf stat would not start: {self._perf.communicate()[1]}")

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._perf is not None
        self._perf.send_signal(signal.SIGINT)
        _, errors = self._perf.communicate(timeout=10)
        text = self._out.read_text() + errors
        self._out.unlink()
        self.tasks = _perf_count(text, "sched:sched_process_fork")
        self.programs = _perf_count(text, "sched:sched_process_exec")


def _perf_count(text: str, event: str) -> int:
    match = re.search(rf"^\s*([\d,]+|<not counted>)\s+{re.escape(event)}", text, re.M)
    if match is None:
        raise RuntimeError(f"perf stat did not report {event}:\n{text}")
    value = match.group(1)
    return 0 if value == "<not counted>" else int(value.replace(",", ""))


def _gpu_samples(facts: dict[str, NodeFacts]) -> int:
    return sum(f.gpu_samples for f in facts.values())


async def _login_cost(fleet: SimFleet, execs: int = 10) -> tuple[float, float]:
    """(tasks, programs) on the node for one exec of `true`: what every poll pays to log in."""
    node = fleet.nodes[0]
    endpoint = Endpoint(node.name, node.host, node.port, fleet.config.user)
    async with SshPool([endpoint], Settings(fleet.known_hosts, (fleet.client_key,), 5.0)) as pool:
        await pool.run(node.name, "true", timeout=10)
        async with SpawnCounter(lambda: _node_pids(fleet, min_age_s=0.0)) as counter:
            for _ in range(execs):
                await pool.run(node.name, "true", timeout=10)
    return counter.tasks / execs, counter.programs / execs


async def _measure(mode: str, fleet: SimFleet, pace: Pace, window_s: float) -> Measure:
    nodes = [Endpoint(n.name, n.host, n.port, fleet.config.user) for n in fleet.nodes]
    settings = Settings(fleet.known_hosts, (fleet.client_key,), 5.0)
    names = [n.name for n in nodes]
    async with SshPool(nodes, settings) as pool:
        await pool.run_all(names, "true", timeout=10)  # logins are not part of the window
        if mode == "stream":
            poller = FleetPoller(pool, names, pace)
            poller.start()
            await poller.wait_first_round(30)
            facts: Callable[[], dict[str, NodeFacts]] = lambda: dict(poller.facts())  # noqa: E731
            stop = poller.stop
        else:
            baseline = ExecPoller(pool, names, pace)
            baseline.start()
            await asyncio.sleep(pace.slow_s)
            facts, stop = (lambda: dict(baseline.facts)), baseline.stop
        await asyncio.sleep(SETTLE_S)  # the long-lived node processes must exist before perf
        async with SpawnCounter(lambda: _node_pids(fleet)) as counter:
            samples_before, cpu_before = _gpu_samples(facts()), _cpu_seconds()
            await asyncio.sleep(window_s)
            cpu = _cpu_seconds() - cpu_before
            samples = _gpu_samples(facts()) - samples_before
        await stop()
        if mode == "exec" and baseline.errors:
            print(
                f"exec mode: {len(baseline.errors)} failed polls, e.g. {baseline.errors[-1]}",
                file=sys.stderr,
            )
    return Measure(mode, len(nodes), window_s, counter.tasks, counter.programs, cpu, samples)


def _report(measures: list[Measure], pace: Pace, login: tuple[float, float]) -> str:
    by_mode = {m.mode: m for m in measures}
    stream, execd = by_mode["stream"], by_mode["exec"]
    lines = [
        f"{stream.nodes} nodes (OpenSSH sshd), window {stream.window_s:g} s, "
        f"GPU every {pace.gpu_ms} ms, meminfo/containers/apps every {pace.slow_s:g} s, "
        f"images every {pace.images_every} slow cycles.",
        "",
        f"One exec of `true` costs {login[0]:.0f} new tasks and {login[1]:.0f} programs on a "
        "node here (sshd session, login shell reading ~/.bashrc, the node wrapper).",
        "",
        "| per node-minute | stream | exec per poll | exec / stream |",
        "|---|---:|---:|---:|",
    ]
    rows = [
        ("tasks created on the node", lambda m: m.forks, "{:.0f}"),
        ("programs exec'd on the node", lambda m: m.execs, "{:.0f}"),
        ("cockpit CPU seconds", lambda m: m.cpu_s, "{:.3f}"),
        ("GPU samples received", lambda m: m.gpu_samples, "{:.0f}"),
    ]
    for label, get, fmt in rows:
        s, e = stream.per_node_minute(get(stream)), execd.per_node_minute(get(execd))
        ratio = f"{e / s:.1f}×" if s else "n/a"
        lines.append(f"| {label} | {fmt.format(s)} | {fmt.format(e)} | {ratio} |")
    per_sample = [
        ("tasks per GPU sample delivered", lambda m: m.forks / max(m.gpu_samples, 1), "{:.2f}"),
        (
            "cockpit CPU ms per GPU sample",
            lambda m: 1e3 * m.cpu_s / max(m.gpu_samples, 1),
            "{:.2f}",
        ),
    ]
    for label, get, fmt in per_sample:
        s, e = get(stream), get(execd)
        ratio = f"{e / s:.1f}×" if s else "n/a"
        lines.append(f"| {label} | {fmt.format(s)} | {fmt.format(e)} | {ratio} |")
    asked = 60_000 / pace.gpu_ms
    kept = execd.per_node_minute(execd.gpu_samples) / asked
    if kept < 0.9:
        lines += [
            "",
            f"Exec per poll kept only {kept:.0%} of the requested GPU pace here: every poll "
            "waits for a login on a busy node, so its per-minute costs are for fewer samples; "
            "the per-sample rows compare like with like.",
        ]
    return "\n".join(lines)


def _write_results(body: str, command: str) -> None:
    write_section(
        "telemetry_channels",
        "## Telemetry: one streaming channel per node vs one exec per poll\n\n"
        f"`{command}` ({time.strftime('%Y-%m-%d')})\n\n{body}",
    )


async def _main(args: argparse.Namespace) -> None:
    if shutil.which("perf") is None:
        raise SystemExit("perf (linux-perf) is needed to count the nodes' processes")
    pace = Pace(gpu_ms=args.gpu_ms, slow_s=args.slow, images_every=args.images_every)
    with tempfile.TemporaryDirectory(prefix="telemetry-bench-") as root:
        fleet = SimFleet(Path(root), args.nodes, server="openssh")
        fleet.start()
        try:
            login = await _login_cost(fleet)
            measures = [await _measure(m, fleet, pace, args.window) for m in ("stream", "exec")]
        finally:
            fleet.stop()
    body = _report(measures, pace, login)
    print(body)
    if args.write_results:
        _write_results(body, "python benchmarks/telemetry_channels.py " + " ".join(sys.argv[1:]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--window", type=float, default=60.0, help="seconds measured per mode")
    parser.add_argument("--gpu-ms", type=int, default=1000)
    parser.add_argument("--slow", type=float, default=5.0)
    parser.add_argument("--images-every", type=int, default=6)
    parser.add_argument("--write-results", action="store_true")
    asyncio.run(_main(parser.parse_args()))


if __name__ == "__main__":
    main()
