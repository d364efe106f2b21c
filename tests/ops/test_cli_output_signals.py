"""The operations' CLI when nobody watches a terminal: plain progress lines, and signals that roll
back (issue 19: SIGTERM/SIGHUP left every booting container and lock, like SIGKILL)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from cockpit.cli.ops_cmds import PlainPrinter
from cockpit.events import (
    Finished,
    Notice,
    Planned,
    Progress,
    Severity,
    StepFinished,
    StepStarted,
)
from cockpit.ops.interrupt import Interrupted, blocking_call, run_interruptible
from cockpit_sim.fleet import SimFleet
from tests.ops.conftest import QWEN, containers


def test_plain_lines_at_step_changes_and_bounded_progress() -> None:
    lines: list[str] = []
    now = [0.0]
    printer = PlainPrinter(lines.append, clock=lambda: now[0])
    kw = {"op": "sync", "lane": "l", "cluster": "c"}
    printer.show(Planned(steps=("transfer",), summary="transfer dgx1 → dgx2", **kw))
    printer.show(StepStarted(step="transfer", node="dgx2", **kw))
    for done in range(0, 1001):  # a thousand progress events over 50 s
        now[0] = done * 0.05
        printer.show(Progress(step="transfer", node="dgx2", done=done, total=1000, unit="B", **kw))
    printer.show(Notice(severity=Severity.WARNING, message="slow link", node="dgx2", **kw))
    printer.show(StepFinished(step="transfer", node="dgx2", detail="image id verified", **kw))
    printer.show(Finished(ok=True, summary="synced 1 peer(s)", **kw))
    progress = [line for line in lines if "transfer: " in line and "%" in line]
    assert 10 <= len(progress) <= 12, progress  # every 10 %, not a thousand lines
    assert lines[0] == "sync: transfer dgx1 → dgx2"
    assert "    dgx2 transfer: started" in lines
    assert "    dgx2 transfer: ok image id verified" in lines
    assert "warning: dgx2: slow link" in lines and lines[-1] == "done: synced 1 peer(s)"
    assert not any("\x1b" in line for line in lines)
    assert printer.exit_code == 0


def test_unknown_totals_print_at_most_every_five_seconds() -> None:
    lines: list[str] = []
    now = [0.0]
    printer = PlainPrinter(lines.append, clock=lambda: now[0])
    for tick in range(200):  # 20 s of boot messages every 0.1 s
        now[0] = tick * 0.1
        printer.show(
            Progress(op="launch", step="boot", node="dgx1", message=f"autotune {tick}/394")
        )
    assert len(lines) == 4, lines


SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    from cockpit.ops.interrupt import Interrupted, run_interruptible

    async def main():
        try:
            print("running", flush=True)
            await asyncio.sleep(60)
        finally:
            print("rolling back", flush=True)
            await asyncio.shield(asyncio.sleep(float(sys.argv[1])))
            print("rolled back", flush=True)

    try:
        run_interruptible(main())
    except Interrupted as exc:
        print(exc, flush=True)
        sys.exit(exc.exit_code)
    """
)


def _started(tmp_path: Path, rollback_s: float) -> subprocess.Popen[str]:
    script = tmp_path / "op.py"
    script.write_text(SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), str(rollback_s)], text=True,
                            stdout=subprocess.PIPE)  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline().strip() == "running"
    return proc


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_each_signal_takes_the_rollback_path(tmp_path: Path, sig: signal.Signals) -> None:
    proc = _started(tmp_path, 0.2)
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=20)
    assert "rolling back\nrolled back\n" in out
    assert f"interrupted by {sig.name}" in out and proc.returncode == 128 + sig


def test_a_second_signal_aborts_at_once(tmp_path: Path) -> None:
    proc = _started(tmp_path, 30.0)
    proc.send_signal(signal.SIGTERM)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "rolling back"
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGTERM and time.monotonic() - started < 5


def test_a_signal_ends_a_blocking_prompt_at_once() -> None:
    """Ctrl-C at `switch`'s `Run this plan?` did nothing until an answer was typed: the loop's
    handlers only run between its steps, and the prompt blocks the loop."""

    async def prompt() -> None:
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM)).start()
        with blocking_call():
            time.sleep(10)  # as input() blocks

    started = time.monotonic()
    with pytest.raises(Interrupted) as stopped:
        run_interruptible(prompt())
    assert stopped.value.exit_code == 128 + signal.SIGTERM and time.monotonic() - started < 5


def _cockpit(fleet: SimFleet, state: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "COCKPIT_STATE_DIR": str(state)}
    return subprocess.Popen(
        [sys.executable, "-m", "cockpit", "--inventory", str(fleet.inventory_dir), *args],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )  # fmt: skip


def _locks(fleet: SimFleet) -> list[Path]:
    return [p for n in fleet.names for p in fleet.node_dir(n).rglob(".cockpit/locks/*.lock")]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_mid_launch_leaves_no_container_and_no_lock(
    fleet: SimFleet, state_dir: Path, sig: signal.Signals
) -> None:
    fleet.set_fault("dgx1", "hang_after_start")  # the launch waits on its head: still running
    proc = _cockpit(fleet, state_dir, "launch", "-r", QWEN, "-c", "2nodes-dac")
    deadline = time.monotonic() + 60
    while not containers(fleet, "dgx1"):  # the head starts last: every rank is up
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[0]
        time.sleep(0.05)
    time.sleep(0.5)  # mid-boot: the launch follows the ranks' logs
    assert _locks(fleet), "the launch holds its locks on the nodes"
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, out
    assert f"interrupted by {sig.name}" in out, out
    assert containers(fleet, "dgx1") == [] and containers(fleet, "dgx2") == [], out
    assert _locks(fleet) == [], out


def test_sync_image_into_a_pipe_prints_its_progress(fleet: SimFleet, state_dir: Path) -> None:
    """Issue 19: `sync-image` printed nothing for minutes when stdout was not a terminal."""
    image = next(i for i in fleet.images("dgx1") if "vllm" in i.get("SimRepo", ""))
    fleet.remove_image("dgx2", image["Id"])
    proc = _cockpit(fleet, state_dir, "sync-image", "-r", QWEN, "-c", "2nodes-dac")
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    lines = out.splitlines()
    assert lines[0].startswith("sync: transfer dgx1 → dgx2"), out
    assert "    dgx2 transfer: started" in lines, out
    assert any(line.startswith("    dgx2 transfer: ") and "MiB" in line for line in lines), out
    assert "    dgx2 transfer: ok image id verified, digest attached" in lines, out
    assert lines[-1].startswith("done: synced 1 peer(s)") and "\x1b" not in out


@pytest.mark.parametrize("cancelled", [False, True])
def test_a_process_stuck_after_a_signal_ends_after_its_grace(cancelled: bool) -> None:
    """The TUI's way out when Textual's shutdown blocks for good (its terminal gone): a timer
    thread ends the process with the signal's code; a shutdown that finished cancels it."""
    code = "\n".join([
        "import time",
        "from cockpit.ops.interrupt import exit_if_stuck",
        "cancel = exit_if_stuck(129, 0.2)",
        "cancel()" if cancelled else "pass",
        "time.sleep(3)",  # stuck, as a blocked event loop is: only the timer thread runs
    ])  # fmt: skip
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], timeout=30)
    took = time.monotonic() - t0
    if cancelled:
        assert done.returncode == 0 and took >= 3
    else:
        assert done.returncode == 129 and took < 2.5


def test_a_signal_arms_its_watchdog_even_when_the_loop_is_blocked_for_good() -> None:
    """What left `cockpit demo` processes behind a closed tmux: Textual's writer thread died on
    the lost terminal, its queue filled, and the loop's thread blocked in `Queue.put`; the
    loop's signal handler then never ran. `install`'s `at_once` runs in the main thread at the
    signal all the same."""
    code = "\n".join([
        "import asyncio, os, queue, signal, threading",
        "from cockpit.ops.interrupt import exit_if_stuck, install",
        "async def main():",
        "    loop = asyncio.get_running_loop()",
        "    install(loop, lambda s: None, lambda s: exit_if_stuck(128 + s, 0.3))",
        "    full = queue.Queue(1)",
        "    full.put('x')",
        "    threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGHUP)).start()",
        "    full.put('never')",  # blocks the loop's thread for good, as Textual's shutdown did
        "asyncio.run(main())",
    ])  # fmt: skip
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], timeout=30)
    assert done.returncode == 128 + 1 and time.monotonic() - t0 < 5
