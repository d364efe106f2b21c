"""The test suite's wall time as the README runs it (two passes), and the machine's CPU in each.

    python benchmarks/suite_time.py [--workers 4] [--serial] [--write-results]

Pass 1: every test not marked `timing`, in `--workers` pytest-xdist workers, a file per worker.
Pass 2: the `timing` tests in one process, on a machine no longer crowded by pass 1.
`--serial` also runs the whole suite in one process first (the baseline of the same run; ~18 min
on 2 cores). CPU: the whole machine's busy time over each pass (/proc/stat, every process:
fleets, sshd, Docker daemons and vLLM included), in core-seconds; the tests start and stop all
of it, so on an otherwise idle machine that is the suite's own.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.procstat import machine_busy  # noqa: E402
from benchmarks.results_md import write_section  # noqa: E402

PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]


@dataclass(frozen=True)
class Pass:
    name: str
    wall_s: float
    busy_s: float  # core-seconds of the whole machine
    summary: str  # pytest's last line
    code: int


def run_pass(name: str, args: list[str]) -> Pass:
    c0, t0 = machine_busy(), time.perf_counter()
    done = subprocess.run([*PYTEST, *args], cwd=ROOT, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, machine_busy() - c0
    lines = [ln for ln in done.stdout.splitlines() if ln.strip()]
    summary = lines[-1].strip("= ") if lines else "(no output)"
    print(f"{name}: {wall:.0f} s, {cpu:.0f} core-s, {summary}", flush=True)
    for line in lines:
        if line.startswith(("FAILED", "ERROR")):
            print(f"  {line}", flush=True)
    return Pass(name, wall, cpu, summary, done.returncode)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--serial", action="store_true")
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    passes = []
    if args.serial:
        passes.append(run_pass("one process", []))
    two = [
        run_pass(
            f"pass 1: {args.workers} workers",
            ["-n", str(args.workers), "--dist", "loadfile", "-m", "not timing"],
        ),
        run_pass("pass 2: `timing`", ["-m", "timing"]),
    ]
    passes += two
    total_wall, total_cpu = sum(p.wall_s for p in two), sum(p.busy_s for p in two)
    rows = [f"| {p.name} | {p.wall_s:.0f} | {p.busy_s:.0f} | {p.summary} |" for p in passes]
    rows.append(f"| **both passes (the README)** | **{total_wall:.0f}** | {total_cpu:.0f} | |")
    if args.serial:
        rows.append(f"| one process ÷ both passes | {passes[0].wall_s / total_wall:.2f}× | | |")
    text = "\n".join(
        [
            "## Test suite: wall time of the README's command",
            "",
            f"`python benchmarks/suite_time.py --workers {args.workers}"
            f"{' --serial' if args.serial else ''}` ({date.today()}, {os.cpu_count()} cores)",
            "",
            "| run | wall s | busy core-s | pytest |",
            "|---|---:|---:|---|",
            *rows,
        ]
    )
    print(text)
    if args.write_results:
        write_section("suite_time", text)
    sys.exit(max(p.code for p in passes))


if __name__ == "__main__":
    main()
