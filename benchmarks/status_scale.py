"""`cockpit status` at fleet scale, and what one node tool call costs.

    python benchmarks/status_scale.py [--nodes 8,64,128,256] [--rounds 3] [--calls 40]
                                      [--write-results]

For each size a fresh simulated fleet starts (asyncssh endpoints, resident tool service), then
`cockpit --inventory DIR status --format json` runs `--rounds` times as its own process, as an
operator runs it. Per round: wall time; the cockpit's CPU (its rusage); the fleet's CPU (daemon,
tool service, sessions and tools), less what the idle fleet burns over the same span; the unknown
facts in the answer (image cells "unknown", nodes not "ok", missing GPU/memory/container facts).
Only complete answers (no unknown fact) make the medians; every figure is also given as a ratio
to the 8-node one of the same run.

Fleet CPU is counted over the daemon's process tree: live processes by /proc/PID/stat (own and
reaped children's time), and processes orphaned on the way (a probe's background loop outliving
its shell) by their rusage when this script, the child subreaper of all it starts, reaps them.

Per call: `docker images` and `nvidia-smi --query-gpu` on one node of the first fleet, through
the exec launcher (a fresh `python -S` per call, the old way), the C front-end and the Python
front-end of the resident service; CPU is the caller's and the service's (which answers both calls
itself: they are quick, `cockpit_sim.tools.service.Quick`; a forked tool would be its child).

cockpit's modules are byte-compiled first (`compileall`, as `pip install` does): this sandbox sets
PYTHONDONTWRITEBYTECODE, which would otherwise recompile them in every fresh process.
"""

from __future__ import annotations

import argparse
import compileall
import ctypes
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.procstat import machine_busy  # noqa: E402
from benchmarks.results_md import write_section  # noqa: E402
from cockpit_sim.fleet import SimFleet  # noqa: E402
from cockpit_sim.fleet.layout import ToolsKind  # noqa: E402
from cockpit_sim.fleet.toolservice import write_frontend  # noqa: E402
from cockpit_sim.tools.launchers import write_launchers  # noqa: E402
from cockpit_sim.tools.node_exec import node_environment  # noqa: E402

PR_SET_CHILD_SUBREAPER = 36
TICK = os.sysconf("SC_CLK_TCK")
IDLE_WINDOW_S = 3.0
SETTLE_S = 1.5  # after a round: the nodes end the probe sessions the cockpit closed
COCKPIT = [sys.executable, "-m", "cockpit"]
CALLS = {
    "docker images": ["docker", "images", "--format", "{{json .}}"],
    "nvidia-smi --query-gpu": [
        "nvidia-smi",
        "--query-gpu=index,name,utilization.gpu,memory.used",
        "--format=csv,noheader,nounits",
    ],
}


# ------------------------------------------------------------------------------ process CPU


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def tree_cpu(root: int) -> float:
    """CPU seconds of `root` and every live descendant (each with its reaped children)."""
    children: dict[int, list[int]] = {}
    spent: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat(int(entry.name))
        if fields is None:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
        spent[int(entry.name)] = sum(int(x) for x in fields[11:15])
    total, queue = 0, [root]
    while queue:
        pid = queue.pop()
        total += spent.get(pid, 0)
        queue.extend(children.get(pid, []))
    return total / TICK


def process_cpu(pid: int, children: bool = True) -> float:
    """One live process's CPU seconds, with its reaped children's unless `children` is False."""
    fields = _stat(pid)
    return sum(int(x) for x in fields[11 : 15 if children else 13]) / TICK if fields else 0.0


def tree_pids(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))):
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, queue = [], [root]
    while queue:
        pid = queue.pop()
        found.append(pid)
        queue.extend(children.get(pid, []))
    return found


def rusage_cpu(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


class Reaper:
    """Reaps what ends under this subreaper; orphans' CPU is the fleet's."""

    def __init__(self) -> None:
        self.orphan_cpu = 0.0
        self.ended: dict[int, tuple[int, resource.struct_rusage]] = {}

    def reap(self, block_for: int | None = None) -> None:
        """Reap all that has ended; with `block_for`, wait until that pid has."""
        while True:
            try:
                pid, status, usage = os.wait4(-1, 0 if block_for is not None else os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.ended[pid] = (status, usage)
            if pid != block_for:
                self.orphan_cpu += rusage_cpu(usage)
                continue
            return


class Sampler(threading.Thread):
    """Peaks while a round runs: the daemon's open descriptors (the one process whose count
    grows with the fleet; its limit is what `sim up`'s node limit must fit), the fleet's memory
    (PSS summed over its processes)."""

    def __init__(self, daemon: int) -> None:
        super().__init__(daemon=True)
        self.root = daemon
        self.fds = 0
        self.pss_kib = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.5):
            pss = 0
            for pid in tree_pids(self.root):
                try:
                    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                        if line.startswith("Pss:"):
                            pss += int(line.split()[1])
                except OSError:
                    continue
            try:
                fds = len(os.listdir(f"/proc/{self.root}/fd"))
            except OSError:
                fds = 0
            self.fds, self.pss_kib = max(self.fds, fds), max(self.pss_kib, pss)


# ------------------------------------------------------------------------------ status rounds


def unknown_facts(answer: dict) -> int:  # type: ignore[type-arg]
    """Image cells not known, nodes not OK, node facts missing."""
    count = sum(v == "unknown" for image in answer["images"] for v in image["presence"].values())
    for node in answer["nodes"]:
        count += node["health"] != "ok"
        count += sum(node[key] is None for key in ("gpu_name", "memory", "containers"))
    return count


@dataclass
class Round:
    wall_s: float
    cockpit_cpu_s: float
    fleet_cpu_s: float  # net of the idle fleet's
    unknown: int
    parts: dict[str, float]  # where the fleet's CPU went (not net of idle)
    others_cores: float  # what the rest of the machine ran meanwhile (other users' work)


@dataclass
class Size:
    nodes: int
    tools: ToolsKind
    idle_cpu_per_s: float
    rounds: list[Round] = field(default_factory=list)
    peak_fds: int = 0
    peak_pss_mib: float = 0.0

    @property
    def label(self) -> str:
        return str(self.nodes) if self.tools == "service" else f"{self.nodes}, exec launchers"

    def median(self, attr: str) -> float | None:
        values = [getattr(r, attr) for r in self.rounds if r.unknown == 0]
        return statistics.median(values) if values else None

    def median_part(self, part: str) -> float | None:
        values = [r.parts[part] for r in self.rounds if r.unknown == 0]
        return statistics.median(values) if values else None


PARTS = {
    "ssh server": "the daemon itself (asyncssh: handshakes, channels, its timers)",
    "sessions": "the sessions' bash (the probe's loops) and all but the tools under them",
    "tool service": "the service process (accept, the quick calls it answers itself, fork, reap)",
    "tools": "the forked tools (the probe's `nvidia-smi -lms` loop, what is not quick)",
}


def fleet_cpu(fleet: SimFleet, reaper: Reaper) -> dict[str, float]:
    """The fleet's CPU seconds so far, by part (see PARTS)."""
    daemon = fleet.pid()
    assert daemon is not None
    try:
        service: int | None = int(fleet.layout.tools_pid.read_text())
    except FileNotFoundError:
        service = None  # exec launchers: the tools run under the sessions
    reaper.reap()
    whole = tree_cpu(daemon) + reaper.orphan_cpu
    served = tree_cpu(service) if service else 0.0
    own = process_cpu(daemon, False)
    service_own = process_cpu(service, False) if service else 0.0
    return {
        "ssh server": own,
        "sessions": whole - own - served,
        "tool service": service_own,
        "tools": served - service_own,
    }


def status_round(
    fleet: SimFleet, reaper: Reaper, idle_rate: float, out: Path
) -> tuple[Round, Sampler]:
    daemon = fleet.pid()
    assert daemon is not None
    sampler = Sampler(daemon)
    sampler.start()
    before, busy, started = fleet_cpu(fleet, reaper), machine_busy(), time.monotonic()
    with open(out, "wb") as sink:
        pid = os.posix_spawn(
            sys.executable,
            [*COCKPIT, "--inventory", str(fleet.root), "status", "--format", "json"],
            os.environ,
            file_actions=[(os.POSIX_SPAWN_DUP2, sink.fileno(), 1)],
        )
        reaper.reap(block_for=pid)
    wall, busy = time.monotonic() - started, machine_busy() - busy
    ours = sum(fleet_cpu(fleet, reaper).values()) - sum(before.values())
    time.sleep(SETTLE_S)
    after, span = fleet_cpu(fleet, reaper), time.monotonic() - started
    sampler.stop.set()
    sampler.join()
    _, usage = reaper.ended.pop(pid)
    others = max(busy - ours - rusage_cpu(usage), 0.0) / wall
    try:
        unknown = unknown_facts(json.loads(out.read_text()))
    except (json.JSONDecodeError, KeyError):
        unknown = -1  # no answer at all
    parts = {part: after[part] - before[part] for part in PARTS}
    fleet_net = max(sum(parts.values()) - idle_rate * span, 0.0)
    return Round(wall, rusage_cpu(usage), fleet_net, unknown, parts, others), sampler


def measure_size(
    nodes: int, tools: ToolsKind, rounds: int, work: Path, reaper: Reaper
) -> tuple[Size, SimFleet]:
    fleet = SimFleet(work / f"{tools}{nodes}", nodes, boot_speed=200.0, owner_pid=os.getpid())
    fleet.config.tools = tools
    fleet.start(timeout=300)
    time.sleep(2.0)  # start-up work (key files, the first meminfo rounds) drains
    idle0, t0 = sum(fleet_cpu(fleet, reaper).values()), time.monotonic()
    time.sleep(IDLE_WINDOW_S)
    idle_rate = (sum(fleet_cpu(fleet, reaper).values()) - idle0) / (time.monotonic() - t0)
    size = Size(nodes, tools, idle_rate)
    for index in range(rounds):
        out = work / f"status-{tools}{nodes}-{index}.json"
        one, peaks = status_round(fleet, reaper, idle_rate, out)
        size.peak_fds = max(size.peak_fds, peaks.fds)
        size.peak_pss_mib = max(size.peak_pss_mib, peaks.pss_kib / 1024)
        size.rounds.append(one)
        print(
            f"  {size.label} nodes, round {index + 1}: {one.wall_s:6.2f} s wall, cockpit "
            f"{one.cockpit_cpu_s:5.2f} CPU-s, fleet {one.fleet_cpu_s:6.2f} CPU-s, "
            f"{one.unknown} unknown facts, others' load {one.others_cores:.1f} cores",
            flush=True,
        )
    return size, fleet


# ------------------------------------------------------------------------------ per call


def per_call(fleet: SimFleet, work: Path, calls: int) -> dict[str, dict[str, tuple[float, float]]]:
    """{front-end: {call: (wall ms, CPU ms)}} on dgx1 of `fleet`."""
    exec_bin, py_bin = work / "bin-exec", work / "bin-python"
    write_launchers(exec_bin)
    py_bin.mkdir(exist_ok=True)
    for name in ("docker", "nvidia-smi"):
        write_frontend(py_bin / name, None, fleet.root)
    env = node_environment(str(fleet.node_dir("dgx1")))
    service = next(
        p for p in tree_pids(fleet.pid() or 0) if b"cockpit_sim.tools.service" in _cmdline(p)
    )
    results: dict[str, dict[str, tuple[float, float]]] = {}
    for label, bin_dir in (
        ("exec launcher (python -S per call)", exec_bin),
        ("C front-end + resident service", fleet.layout.bin_dir),
        ("Python front-end + resident service", py_bin),
    ):
        results[label] = {}
        for name, argv in CALLS.items():
            path = str(bin_dir / argv[0])
            subprocess.run([path, *argv[1:]], env=env, cwd=env["HOME"], capture_output=True)
            caller0 = rusage_cpu(resource.getrusage(resource.RUSAGE_CHILDREN))
            service0, started = process_cpu(service), time.perf_counter()
            for _ in range(calls):
                done = subprocess.run(
                    [path, *argv[1:]], env=env, cwd=env["HOME"], capture_output=True
                )
                assert done.returncode == 0 and done.stdout, done
            wall = (time.perf_counter() - started) / calls * 1000
            caller = rusage_cpu(resource.getrusage(resource.RUSAGE_CHILDREN)) - caller0
            cpu = (caller + process_cpu(service) - service0) / calls * 1000
            results[label][name] = (wall, cpu)
            print(f"  {label}, {name}: {wall:.1f} ms wall, {cpu:.1f} CPU-ms", flush=True)
    return results


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


# ------------------------------------------------------------------------------ report


def _ratio(value: float | None, base: float | None) -> str:
    return f"{value / base:.2f}×" if value is not None and base else "–"


def _fmt(value: float | None, digits: int = 2) -> str:
    return f"{value:.{digits}f}" if value is not None else "incomplete"


def report(
    sizes: list[Size], calls: dict[str, dict[str, tuple[float, float]]], argv: str, load: str
) -> str:
    base = sizes[0]
    lines = [
        "## `cockpit status` at scale, and the cost of one node tool call",
        "",
        f"`python benchmarks/status_scale.py {argv}` "
        f"({datetime.now(UTC).date()}, 1-min load average {load} at the start, 2 cores shared "
        "by the fleet and the cockpit)",
        "",
        "Medians of the complete answers (no unknown fact) of each size; ratios to the "
        f"{base.nodes}-node figures of the same run. Fleet CPU is net of the idle fleet's. "
        "Others' load: what the rest of this shared machine ran during the round (all cores' "
        "busy time less the cockpit's and the fleet's), in cores of 2.",
        "",
        "| nodes | wall s | ratio | cockpit CPU-s | ratio | fleet CPU-s | ratio "
        "| fleet CPU-ms/node | each round: wall s (unknown facts, others' load in cores) "
        "| fleet idle CPU % | daemon's peak fds | peak PSS MiB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for size in sizes:
        wall, cockpit, fleet = (size.median(a) for a in ("wall_s", "cockpit_cpu_s", "fleet_cpu_s"))
        per_node = f"{fleet / size.nodes * 1000:.1f}" if fleet is not None else "–"
        each = "; ".join(f"{r.wall_s:.2f} ({r.unknown}, {r.others_cores:.1f})" for r in size.rounds)
        lines.append(
            f"| {size.label} | {_fmt(wall)} | {_ratio(wall, base.median('wall_s'))} "
            f"| {_fmt(cockpit)} | {_ratio(cockpit, base.median('cockpit_cpu_s'))} "
            f"| {_fmt(fleet)} | {_ratio(fleet, base.median('fleet_cpu_s'))} | {per_node} "
            f"| {each} | {size.idle_cpu_per_s * 100:.0f} | {size.peak_fds} "
            f"| {size.peak_pss_mib:.0f} |"
        )
    target = next((z for z in sizes if z.nodes == 128 and z.tools == "service"), None)
    if target is not None and (wall := target.median("wall_s")) is not None:
        others = statistics.median(r.others_cores for r in target.rounds)
        verdict = "under" if wall < 5 else "over"
        lines += [
            "",
            f"At 128 nodes the median complete answer took {wall:.2f} s, {verdict} the issue's "
            f"5 s, while other work kept {others:.1f} of the 2 cores busy.",
        ]
    lines += [
        "",
        "Where the fleet's CPU goes, CPU-ms per node and round (medians; not net of idle): "
        + "; ".join(f"*{name}*: {what}" for name, what in PARTS.items())
        + ". With the exec launchers there is no service: their tools count under *sessions*.",
        "",
        "| nodes | " + " | ".join(PARTS) + " |",
        "|---:|" + "---:|" * len(PARTS),
    ]
    for size in sizes:
        cells = [size.median_part(part) for part in PARTS]
        lines.append(
            f"| {size.label} | "
            + " | ".join("–" if c is None else f"{c / size.nodes * 1000:.1f}" for c in cells)
            + " |"
        )
    old = next(iter(calls))
    lines += [
        "",
        "One call on a node (median-free: the mean of the calls), CPU of the caller and of the "
        "service together; ratio to the exec launcher's.",
        "",
        "| front-end | "
        + " | ".join(f"{name} wall ms | CPU ms | CPU ratio" for name in CALLS)
        + " |",
        "|---|" + "---:|---:|---:|" * len(CALLS),
    ]
    for label, figures in calls.items():
        cells = []
        for name in CALLS:
            wall, cpu = figures[name]
            cells.append(f"{wall:.1f} | {cpu:.1f} | {cpu / calls[old][name][1]:.2f}×")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", default="8,64,128,256")
    parser.add_argument(
        "--exec-nodes", default="8", help="sizes also run with the exec launchers (the old way)"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    load = Path("/proc/loadavg").read_text().split()[0]
    compileall.compile_dir(ROOT / "cockpit", quiet=1)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1) != 0:
        raise SystemExit("cannot become the child subreaper: fleet CPU would miss orphans")
    reaper = Reaper()
    sizes: list[Size] = []
    calls: dict[str, dict[str, tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="status-scale-") as tmp:
        work = Path(tmp)
        runs: list[tuple[int, ToolsKind]] = [(int(n), "service") for n in args.nodes.split(",")]
        runs += [(int(n), "exec") for n in args.exec_nodes.split(",") if n]
        for nodes, tools in runs:
            size, fleet = measure_size(nodes, tools, args.rounds, work, reaper)
            try:
                if not calls:
                    calls = per_call(fleet, work, args.calls)
            finally:
                fleet.stop()
                reaper.reap()
            sizes.append(size)
    shown = " ".join(a for a in sys.argv[1:] if a != "--write-results")
    text = report(sizes, calls, shown, load)
    print("\n" + text)
    if args.write_results:
        write_section("status_scale", text)


if __name__ == "__main__":
    main()
