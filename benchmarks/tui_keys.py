"""The TUI as an operator runs it, in a real terminal (tmux): key→frame latency, idle CPU, RSS,
and what it costs a bench to have the TUI open.

    python benchmarks/tui_keys.py [--presses 40] [--idle-s 30] [--soak-min 0] [--write-results]
    python benchmarks/tui_keys.py --soak-only [--soak-min 30] [--flood-lps 2000] [--write-results]

Needs `tmux` (Debian's package).

Scenes, each on a fresh simulated fleet (asyncssh endpoints, resident tool service) and a fresh
`cockpit --inventory DIR tui` in a tmux window of 160×48 on a private tmux server:

- **8 nodes, a lane serving, a bench running**: `qwen3-0.6b-2x` launched by `cockpit launch`,
  then `cockpit bench` (depths 0 and 4K, c1/c2, 3 runs) from the command line; first without the
  TUI, then with it open (twice each, alternating): the bench's wall time with ÷ without. The keys
  are pressed during a third bench.
- **The floor**: `benchmarks/tui_floor_app.py`, an almost empty Textual app with the same pane
  titles, the same `?` and the same `m`, in the same terminal while the same benches run: what
  tmux, the harness and the loaded machine add to any Textual app's frame.
- **128 idle nodes**: nothing serving; then the floor app while that cockpit stays open, since at
  this size the load is the cockpit's own polling of every node (the simulated nodes answer on
  the same 2 cores).

Key→frame, for two keys that redraw the whole screen: `?` (the help over the panes; `?` again
closes it: not Escape, which a terminal app must wait on to tell it from the start of an escape
sequence) and `m` (maximise the focused pane, then restore it: the whole layout changes), sent
with `send-keys` through a tmux control-mode client; the latency is until the app's write that
`capture-pane` then shows the change in (tmux's `%output` notification of it: the screen is
captured after each write, through the same client, with no process spawned per look). Presses
are 250-450 ms apart, at random phases of the panes' own refreshes. CPU a press: the app's CPU
time over its presses less its rate over 5 s with no key just before, in the same load. Idle
CPU: the TUI process's own CPU time over `--idle-s` seconds with no key pressed, as % of one
core. RSS: VmRSS of the TUI process.

`--soak-min M`: then M minutes at 8 nodes with the lane serving and benches back to back, RSS
sampled every 30 s: printed at 10 minutes, and the spread (max − min over their mean) of the
samples of the last 20 minutes. `--soak-only` runs only the soak, with a log flood of
`--flood-lps` lines a second into the lane's container logs, as its own results section;
`--soak-nodes 8,128` soaks at each fleet size in turn (the lane on two of the nodes) and gives
each size's RSS at 10 minutes as a ratio to the 8-node one (section `tui_soak_nodes`).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import queue
import random
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.procstat import process_cpu  # noqa: E402
from benchmarks.results_md import write_section  # noqa: E402
from benchmarks.tui_floor_app import TITLES as PANE_TITLES  # noqa: E402  (the cockpit's panes)
from cockpit_sim.fleet import SimFleet  # noqa: E402

COCKPIT = [sys.executable, "-m", "cockpit"]
SIZE = (160, 48)
RECIPE, CLUSTER = "qwen3-0.6b-2x", "dgx56-switch"
BENCH = ("--depths", "0,4096", "--concurrency", "1,2", "--runs", "3")
FLOOR_APP = ROOT / "benchmarks" / "tui_floor_app.py"


def cockpit(inventory: Path, *args: str, timeout: float = 900.0) -> float:
    """Run `cockpit --inventory DIR ARGS` to its end; its wall seconds (raises on failure)."""
    t0 = time.perf_counter()
    done = subprocess.run(
        [*COCKPIT, "--inventory", str(inventory), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise SystemExit(f"cockpit {args[0]} failed:\n{done.stdout}\n{done.stderr}")
    return time.perf_counter() - t0


class Terminal:
    """A tmux window on a private server, running one command, driven and watched through one
    control-mode client (`tmux -C`): keys and screen captures go down its pipe (no process per
    poll: spawning `tmux capture-pane` every 10 ms cost this harness ~3 ms of CPU each, a load on
    the cores it measures), and tmux's `%output` notifications say when the app wrote to the
    terminal, so the screen is captured only after the app wrote something."""

    def __init__(self, command: list[str], name: str = "tui") -> None:
        self.socket = f"cockpit-bench-{os.getpid()}-{name}"
        cols, rows = SIZE
        shell = "exec " + shlex.join(command)
        subprocess.run(
            ["tmux", "-L", self.socket, "new-session", "-d", "-s", "tui", "-x", str(cols), "-y",
             str(rows), shell],
            check=True,
        )  # fmt: skip
        self._control = subprocess.Popen(
            ["tmux", "-L", self.socket, "-C", "attach", "-t", "tui"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._replies: queue.Queue[tuple[bool, list[str]]] = queue.Queue()
        self._lock = threading.Lock()
        self._wrote = threading.Condition()
        self.writes = 0  # `%output` notifications so far
        self.last_write = 0.0  # perf_counter() of the latest
        threading.Thread(target=self._read, daemon=True).start()
        self.pid = int(self._command("display-message -p -t tui '#{pane_pid}'")[0])

    def _read(self) -> None:
        """Command replies (`%begin` … `%end`/`%error` of our own commands) to the queue; each
        `%output` counted and timed."""
        assert self._control.stdout is not None
        reply: list[str] | None = None
        for raw in self._control.stdout:
            if raw.startswith(b"%output "):
                with self._wrote:
                    self.writes += 1
                    self.last_write = time.perf_counter()
                    self._wrote.notify_all()
            elif raw.startswith(b"%begin ") and raw.rstrip().endswith(b" 1"):
                reply = []
            elif reply is not None and raw.startswith((b"%end ", b"%error ")):
                self._replies.put((raw.startswith(b"%end "), reply))
                reply = None
            elif reply is not None:
                reply.append(raw.decode(errors="replace").rstrip("\n"))

    def _command(self, command: str) -> list[str]:
        assert self._control.stdin is not None
        with self._lock:
            self._control.stdin.write(command.encode() + b"\n")
            self._control.stdin.flush()
            ok, lines = self._replies.get(timeout=30)
        if not ok:
            raise RuntimeError(f"tmux {command!r}: {' '.join(lines)}")
        return lines

    def screen(self) -> str:
        return "\n".join(self._command("capture-pane -p -t tui"))

    def press(self, key: str) -> None:
        self._command(f"send-keys -t tui {shlex.quote(key)}")

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)
        self._control.wait(timeout=10)
        for _ in range(200):  # the TUI quits on SIGHUP (at worst its 5 s shutdown grace)
            if not Path(f"/proc/{self.pid}").exists():
                return
            time.sleep(0.05)
        print(f"  pid {self.pid} still running 10 s after SIGHUP: killed", flush=True)
        os.kill(self.pid, signal.SIGKILL)

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS")

    def wait_for(self, ready: Callable[[str], bool], timeout: float, since: float | None = None,
                 poll: float = 0.05) -> float:  # fmt: skip
        """Seconds from `since` (default: now) until the app wrote what makes the screen satisfy
        `ready`: the time of the app's latest write when the capture that showed it returned (an
        upper bound by the writes of other content that came between). The screen is captured
        after each write the app makes (at most every `poll` s when it makes none)."""
        t0 = time.perf_counter() if since is None else since
        while time.perf_counter() - t0 < timeout:
            with self._wrote:
                seen = self.writes
            if ready(self.screen()):
                with self._wrote:  # read after the capture: the write that showed it is older
                    return max(self.last_write - t0, 0.0)
            with self._wrote:
                self._wrote.wait_for(lambda seen=seen: self.writes != seen, timeout=poll)
        raise TimeoutError(f"screen not ready after {timeout} s:\n{self.screen()}")


def panes_shown(screen: str) -> int:
    return sum(1 for title in PANE_TITLES if title in screen)


HELP_TITLE = "Keys  (ctrl+p"


@dataclass(frozen=True)
class KeyProbe:
    """A key that changes the screen, the key that changes it back, and how to tell them apart."""

    name: str
    key: str
    back: str
    shown: Callable[[str], bool]


KEYS = (
    KeyProbe("`?` help", "?", "?", lambda s: HELP_TITLE in s),
    KeyProbe("`m` maximise", "m", "m", lambda s: panes_shown(s) <= 2),
)


def key_latencies(
    term: Terminal, probe: KeyProbe, presses: int, between: Callable[[], None] = lambda: None
) -> list[float]:
    """`probe.key`, then `probe.back`, … `presses` times in all: ms until the screen shows the
    change; `between` runs before each press."""
    rng = random.Random(0)
    latencies = []
    for _ in range(presses):
        between()
        changed = probe.shown(term.screen())
        t0 = time.perf_counter()
        term.press(probe.back if changed else probe.key)
        shown = term.wait_for(lambda s, was=changed: probe.shown(s) != was, timeout=10, since=t0)
        latencies.append(shown * 1000)
        time.sleep(rng.uniform(0.25, 0.45))
    if probe.shown(term.screen()):
        term.press(probe.back)
    return latencies


BASE_RATE_S = 5.0
"""Seconds without a key, in the same load, before the presses: the rate their CPU is net of."""


def all_keys(
    term: Terminal, presses: int, between: Callable[[], None] = lambda: None
) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Each probe's key→frame latencies, and its CPU ms a press in the app (its CPU time over
    the presses less what it spends at the same time with no key, measured just before)."""
    between()
    rate = idle_cpu_pct(term, BASE_RATE_S) / 100
    latencies, cpu = {}, {}
    for probe in KEYS:
        c0, t0 = process_cpu(term.pid), time.perf_counter()
        latencies[probe.name] = key_latencies(term, probe, presses, between)
        spent = process_cpu(term.pid) - c0 - rate * (time.perf_counter() - t0)
        cpu[probe.name] = 1000 * max(spent, 0.0) / presses
    return latencies, cpu


def idle_cpu_pct(term: Terminal, seconds: float) -> float:
    c0, t0 = process_cpu(term.pid), time.perf_counter()
    time.sleep(seconds)
    return 100 * (process_cpu(term.pid) - c0) / (time.perf_counter() - t0)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@dataclass
class Scene:
    name: str
    nodes: int
    latencies: dict[str, list[float]] = field(default_factory=dict)  # by KeyProbe.name
    press_cpu_ms: dict[str, float] = field(default_factory=dict)  # by KeyProbe.name
    idle_cpu: float | None = None
    rss_mib: float | None = None
    bench_without_s: list[float] = field(default_factory=list)
    bench_with_s: list[float] = field(default_factory=list)
    load_before: float = 0.0  # 1-min load average before its keys are measured
    load_after: float | None = None  # and after


def open_tui(fleet: SimFleet, reports: Path, nodes: int) -> Terminal:
    term = Terminal([*COCKPIT, "--inventory", str(fleet.inventory_dir), "tui", "--reports",
                     str(reports)])  # fmt: skip
    # ready: every pane drawn and the first node listed
    term.wait_for(lambda s: panes_shown(s) >= 6 and "dgx1 " in s, timeout=120, poll=0.2)
    time.sleep(5 if nodes <= 8 else 20)  # first rounds of probes and scrapes over
    return term


class BenchLoop:
    """`cockpit bench` on the serving lane, back to back until closed."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.running: subprocess.Popen[bytes] | None = None

    def keep_going(self) -> None:
        if self.running is None or self.running.poll() is not None:
            self.running = subprocess.Popen(
                self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )

    def close(self) -> None:
        if self.running is not None:
            self.running.terminate()
            self.running.wait(timeout=60)


def measure_floor(floor: Scene, presses: int, between: Callable[[], None] = lambda: None) -> None:
    """The floor app in a tmux server of its own: its key latencies and RSS into `floor`."""
    term = Terminal([sys.executable, str(FLOOR_APP)], name="floor")
    try:
        term.wait_for(lambda s: panes_shown(s) == len(PANE_TITLES), timeout=30)
        floor.load_before = os.getloadavg()[0]
        floor.latencies, floor.press_cpu_ms = all_keys(term, presses, between)
        floor.load_after = os.getloadavg()[0]
        floor.rss_mib = term.rss_mib()
    finally:
        term.close()


def serving_scenes(work: Path, presses: int, idle_s: float) -> list[Scene]:
    """The cockpit at 8 nodes with a lane serving and a bench running, and the floor app under
    the same load."""
    scene = Scene("8 nodes, lane serving, bench running", 8)
    floor = Scene("floor: empty Textual app, same load", 8)
    with SimFleet(work / "fleet8", 8, owner_pid=os.getpid()) as fleet:
        inv, reports = fleet.inventory_dir, work / "reports8"
        cockpit(inv, "launch", "--recipe", RECIPE, "--cluster", CLUSTER)
        bench = ("bench", "--recipe", RECIPE, "--cluster", CLUSTER, "--label", "tui-keys",
                 "--reports", str(reports), *BENCH)  # fmt: skip
        scene.bench_without_s.append(cockpit(inv, *bench))
        term = open_tui(fleet, reports, 8)
        try:
            scene.idle_cpu = idle_cpu_pct(term, idle_s)
            scene.bench_with_s.append(cockpit(inv, *bench))
            term.close()
            scene.bench_without_s.append(cockpit(inv, *bench))
            term = open_tui(fleet, reports, 8)
            scene.bench_with_s.append(cockpit(inv, *bench))
            benches = BenchLoop([*COCKPIT, "--inventory", str(inv), *bench])
            try:
                benches.keep_going()
                time.sleep(3)  # the bench past its model query and warm-up
                scene.load_before = os.getloadavg()[0]
                scene.latencies, scene.press_cpu_ms = all_keys(term, presses, benches.keep_going)
                scene.load_after = os.getloadavg()[0]
                scene.rss_mib = term.rss_mib()
                term.close()
                measure_floor(floor, presses, benches.keep_going)
            finally:
                benches.close()
        finally:
            term.close()
    return [scene, floor]


def idle_scenes(work: Path, nodes: int, presses: int, idle_s: float) -> list[Scene]:
    """The cockpit on `nodes` idle nodes, then the floor app while the cockpit stays open (its
    polling of every node is the load)."""
    scene = Scene(f"{nodes} idle nodes", nodes)
    floor = Scene(f"floor: empty Textual app, the {nodes}-node cockpit open beside it", nodes)
    with SimFleet(work / f"fleet{nodes}", nodes, owner_pid=os.getpid()) as fleet:
        term = open_tui(fleet, work / f"reports{nodes}", nodes)
        try:
            scene.idle_cpu = idle_cpu_pct(term, idle_s)
            scene.load_before = os.getloadavg()[0]
            scene.latencies, scene.press_cpu_ms = all_keys(term, presses)
            scene.load_after = os.getloadavg()[0]
            scene.rss_mib = term.rss_mib()
            measure_floor(floor, presses)  # in a terminal of its own, the cockpit still open
        finally:
            term.close()
    return [scene, floor]


class LogFlood:
    """Lines appended, from a thread, to the serving lane's container logs (docker's json-file,
    where a chatty engine's stderr lands) at `rate` lines a second in all: the lane's
    `docker logs -f` streams them to the Log pane as from a real engine."""

    def __init__(self, fleet_dir: Path, rate: int) -> None:
        self.logs = sorted(fleet_dir.rglob("containers/*/json.log"))
        self.rate = rate
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        if not self.logs:
            raise SystemExit("no container log to flood: is the lane serving?")
        self._thread.start()

    def _run(self) -> None:
        tick = 0.05
        per_log = max(1, round(self.rate * tick / len(self.logs)))
        while not self._stop.wait(tick):
            now = datetime.now(UTC)
            stamp, short = now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), now.strftime("%m-%d %H:%M:%S")
            for path in self.logs:
                lines = "".join(
                    json.dumps({
                        "log": f"(EngineCore pid=1) INFO {short} [flood.py:1] line "
                               f"{self.sent + i}: chatty engine\n",
                        "stream": "stderr",
                        "time": stamp,
                    }) + "\n"
                    for i in range(per_log)
                )  # fmt: skip
                with path.open("a") as handle:
                    handle.write(lines)
                self.sent += per_log

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()


def soak(
    work: Path, minutes: float, flood_lps: int, nodes: int = 8
) -> tuple[list[tuple[float, float]], float]:
    """(minutes, RSS MiB) every 30 s with the lane serving, benches back to back and (when
    `flood_lps`) a log flood; and the flood's achieved lines a second."""
    samples: list[tuple[float, float]] = []
    with SimFleet(work / f"soak{nodes}", nodes, owner_pid=os.getpid()) as fleet:
        inv, reports = fleet.inventory_dir, work / f"soak{nodes}-reports"
        cockpit(inv, "launch", "--recipe", RECIPE, "--cluster", CLUSTER)
        term = open_tui(fleet, reports, nodes)
        bench = [*COCKPIT, "--inventory", str(inv), "bench", "--recipe", RECIPE, "--cluster",
                 CLUSTER, "--label", "soak", "--reports", str(reports), *BENCH]  # fmt: skip
        benches = BenchLoop(bench)
        flood = LogFlood(work / f"soak{nodes}", flood_lps) if flood_lps else None
        t0 = time.perf_counter()
        try:
            if flood is not None:
                flood.start()  # and it reaches the Log pane:
                term.wait_for(lambda s: "[flood.py:1]" in s, timeout=60, poll=0.5)
            while (elapsed := time.perf_counter() - t0) < minutes * 60:
                benches.keep_going()
                samples.append((elapsed / 60, term.rss_mib()))
                lines = f", {flood.sent:,} flood lines" if flood else ""
                print(f"  soak {nodes} nodes {elapsed / 60:5.1f} min  RSS "
                      f"{samples[-1][1]:.1f} MiB{lines}", flush=True)  # fmt: skip
                time.sleep(30)
        finally:
            if flood is not None:
                flood.close()
            benches.close()
            term.close()
    return samples, (flood.sent / (time.perf_counter() - t0) if flood else 0.0)


def at_10_min(soaked: list[tuple[float, float]]) -> tuple[float, float]:
    return min(soaked, key=lambda s: abs(s[0] - 10))


def soak_report(
    soaked: list[tuple[float, float]], minutes: float, flood_lps: float, nodes: int = 8
) -> str:
    at10 = at_10_min(soaked)
    window = min(20.0, minutes / 2)  # the last 20 of 30 minutes; of a shorter soak, half
    last = [rss for minute, rss in soaked if minute >= soaked[-1][0] - window]
    spread = (max(last) - min(last)) / statistics.mean(last)
    flood = f", a log flood of {flood_lps:,.0f} lines/s" if flood_lps else ""
    return (
        f"Soak, {minutes:g} min at {nodes} nodes, the lane serving, benches back to back{flood}: "
        f"RSS {soaked[0][1]:.0f} MiB at start, {at10[1]:.0f} MiB at {at10[0]:.0f} min, "
        f"{soaked[-1][1]:.0f} MiB at the end; over the last {window:g} min "
        f"{min(last):.0f}-{max(last):.0f} MiB, **spread {100 * spread:.1f} %**."
    )


def soak_only(work: Path, minutes: float, flood_lps: int, sizes: list[int]) -> str:
    """The soak at each fleet size in turn, as its results section."""
    runs = {nodes: soak(work, minutes, flood_lps, nodes) for nodes in sizes}
    nodes_arg = "" if sizes == [8] else f" --soak-nodes {','.join(map(str, sizes))}"
    parts = [
        "## TUI soak: RSS with a lane, benches and a log flood"
        + ("" if sizes == [8] else ", by fleet size"),
        f"`python benchmarks/tui_keys.py --soak-only --soak-min {minutes:g} "
        f"--flood-lps {flood_lps}{nodes_arg}` ({date.today()})",
    ]
    for nodes, (soaked, achieved) in runs.items():
        parts.append(
            soak_report(soaked, minutes, achieved, nodes)
            + "\n\nRSS MiB every 30 s: "
            + ", ".join(f"{rss:.0f}" for _, rss in soaked)
        )
    if 8 in runs and len(runs) > 1:
        at10 = {nodes: at_10_min(soaked)[1] for nodes, (soaked, _) in runs.items()}
        parts.append(
            "RSS at 10 min, ratio to 8 nodes: "
            + "; ".join(f"{n} nodes {rss:.0f} MiB ×{rss / at10[8]:.2f}" for n, rss in at10.items())
        )
    return "\n\n".join(parts)


def ratio(value: float | None) -> str:
    return "" if value is None else f"×{value:.2f}"


def report(scenes: list[Scene], soaked: list[tuple[float, float]], presses: int,
           idle_s: float, soak_min: float) -> str:  # fmt: skip
    base = scenes[0]
    loads = ", ".join(f"{s.load_before:.2f} → {s.load_after:.2f}" for s in scenes if s.load_after)
    rows = [
        f"`python benchmarks/tui_keys.py --presses {presses} --idle-s {idle_s:g} "
        f"--soak-min {soak_min:g}` ({date.today()}; 1-min load average at the start and the "
        f"end of each scene: {loads})",
        "",
        f"`cockpit tui` in tmux at {SIZE[0]}×{SIZE[1]} on a simulated fleet, this machine's "
        f"{os.cpu_count()} cores shared by the fleet, the TUI, tmux and the probe of the screen. "
        f"Key→frame: `?` (help, open / close) and `m` (maximise / restore) until the screen "
        f"shows the change, over {presses} presses each. Each floor row is the empty app "
        f"under the load of the cockpit row above it; p95 ratios: to the same key at 8 nodes, "
        f"and to the floor under the same load; idle CPU and RSS: ratio to the 8-node scene's.",
        "",
        "| scene | key | key→frame p50 ms | p95 ms | ÷ 8 nodes | ÷ floor | max ms "
        "| CPU ms a press | idle CPU % of a core | RSS MiB |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s, after in zip(scenes, [*scenes[1:], None], strict=True):
        floor = after if after is not None and after.name.startswith("floor") else None
        for key, latencies in s.latencies.items():
            p50, p95 = percentile(latencies, 0.5), percentile(latencies, 0.95)
            cockpit_row = not s.name.startswith("floor")
            to_base = p95 / percentile(base.latencies[key], 0.95) if cockpit_row else None
            to_floor = p95 / percentile(floor.latencies[key], 0.95) if floor else None
            idle = "–" if s.idle_cpu is None else f"{s.idle_cpu:.1f}"
            if s.idle_cpu is not None and base.idle_cpu and s is not base:
                idle += f" {ratio(s.idle_cpu / base.idle_cpu)}"
            rss = f"{s.rss_mib or 0:.0f}"
            if cockpit_row and s.rss_mib and base.rss_mib and s is not base:
                rss += f" {ratio(s.rss_mib / base.rss_mib)}"
            rows.append(
                f"| {s.name} | {key} | {p50:.0f} | {p95:.0f} | {ratio(to_base)} "
                f"| {ratio(to_floor)} | {max(latencies):.0f} | {s.press_cpu_ms.get(key, 0):.0f} "
                f"| {idle} | {rss} |"
            )
    if base.bench_with_s and base.bench_without_s:
        without = statistics.median(base.bench_without_s)
        with_ = statistics.median(base.bench_with_s)
        rows += [
            "",
            f"Bench ({' '.join(BENCH)}) on the serving lane, wall s: without the TUI "
            f"{', '.join(f'{t:.1f}' for t in base.bench_without_s)}; with the TUI open "
            f"{', '.join(f'{t:.1f}' for t in base.bench_with_s)}: "
            f"**with ÷ without {with_ / without:.2f}** (medians).",
        ]
    if soaked:
        rows += ["", soak_report(soaked, soak_min, 0)]
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presses", type=int, default=40)
    parser.add_argument("--idle-s", type=float, default=30.0)
    parser.add_argument("--nodes", type=int, default=128, help="the idle scene's fleet")
    parser.add_argument("--soak-min", type=float, default=0.0)
    parser.add_argument(
        "--soak-only", action="store_true", help="only the soak (its own results section)"
    )
    parser.add_argument("--flood-lps", type=int, default=2000, help="the soak's log flood")
    parser.add_argument("--soak-nodes", default="8", help="the soak's fleet sizes, e.g. 8,128")
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    compileall.compile_dir(str(ROOT / "cockpit"), quiet=1)
    with tempfile.TemporaryDirectory(prefix="cockpit-tui-keys-") as tmp:
        work = Path(tmp)
        if args.soak_only:
            sizes = [int(n) for n in args.soak_nodes.split(",")]
            text = soak_only(work, args.soak_min or 30.0, args.flood_lps, sizes)
            print(text)
            if args.write_results:
                write_section("tui_soak" if sizes == [8] else "tui_soak_nodes", text)
            return
        scenes = serving_scenes(work, args.presses, args.idle_s)
        print(report(scenes, [], args.presses, args.idle_s, 0), flush=True)
        scenes += idle_scenes(work, args.nodes, args.presses, args.idle_s)
        soaked = soak(work, args.soak_min, 0)[0] if args.soak_min > 0 else []
    text = "## TUI in a terminal: key→frame, idle CPU, RSS\n\n" + report(
        scenes, soaked, args.presses, args.idle_s, args.soak_min
    )
    print(text)
    if args.write_results:
        write_section("tui_keys", text)


if __name__ == "__main__":
    main()
