"""`cockpit logs`: which ranks (pure), lines in time order (pure), and the command itself on the
simulated fleet over real SSH, with a follow read and ended by a signal."""

from __future__ import annotations

import math
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from cockpit.config import load_inventory
from cockpit.errors import CockpitError, InputError
from cockpit.ops.logs import Interleave, RankLog, check_since, pick
from cockpit.telemetry.docker_out import ContainerRow
from cockpit_sim.fleet import SimFleet
from tests.ops.conftest import BOOT_TIMEOUT, QWEN

# -- which ranks ---------------------------------------------------------------------------------


def row(lane: str, cluster: str, rank: int, state: str = "running") -> ContainerRow:
    labels = {"cockpit.lane": lane, "cockpit.cluster": cluster, "cockpit.rank": str(rank)}
    return ContainerRow("id", f"cockpit-{lane}-r{rank}", "img", state, None, labels)


SERVING = {"dgx1": [row(QWEN, "2nodes-dac", 0)], "dgx2": [row(QWEN, "2nodes-dac", 1, "exited")]}


def test_the_head_by_default_one_rank_or_every_rank() -> None:
    (head,) = pick(QWEN, SERVING, {}).ranks
    assert head == RankLog("dgx1", 0, f"cockpit-{QWEN}-r0", True) and head.tag == "dgx1/r0"
    (worker,) = pick(QWEN, SERVING, {}, rank=1).ranks
    assert worker.node == "dgx2" and not worker.running  # an exited rank's log is still there
    assert [r.tag for r in pick(QWEN, SERVING, {}, every=True).ranks] == ["dgx1/r0", "dgx2/r1"]
    other = {"dgx3": [row("other-lane", "4nodes-switch", 0)]}
    assert pick(QWEN, {**SERVING, **other}, {}, cluster="2nodes-dac").ranks == (head,)


def test_a_rank_that_is_not_there_is_bad_input_unless_a_node_did_not_answer() -> None:
    with pytest.raises(InputError, match=r"has no container for rank 5 \(ranks: 0 on dgx1, 1 on"):
        pick(QWEN, SERVING, {}, rank=5)
    with pytest.raises(InputError, match=f"^{QWEN} runs nowhere: no container"):
        pick(QWEN, {"dgx1": [], "dgx2": []}, {})
    workers_only = {"dgx2": [row(QWEN, "2nodes-dac", 1)]}
    with pytest.raises(CockpitError, match=r"its head \(rank 0\) .* dgx1 unreachable \(refused\)"):
        pick(QWEN, workers_only, {"dgx1": "refused"})
    with pytest.raises(CockpitError, match=r"no container of .* found: dgx1 unreachable") as exc:
        pick(QWEN, {}, {"dgx1": "refused"})
    assert exc.value.exit_code == 1
    both = {**SERVING, "dgx5": [row(QWEN, "dgx56-switch", 0)]}
    with pytest.raises(
        InputError, match="on 2nodes-dac and dgx56-switch: choose one with --cluster"
    ):
        pick(QWEN, both, {})
    every = pick(
        QWEN, workers_only, {"dgx1": "refused"}, every=True
    )  # the rest, and who is missing
    assert [r.tag for r in every.ranks] == ["dgx2/r1"] and every.unreachable == {"dgx1": "refused"}


@pytest.mark.parametrize("since", ["10m", "1h30m", "45s", "1.5h", "500ms", "2026-10-02",
                                   "2026-10-02T19:06:00Z", "2026-10-02T19:06:00.5+02:00", "1790000000"])  # fmt: skip
def test_since_takes_what_docker_takes(since: str) -> None:
    assert check_since(since) == since


@pytest.mark.parametrize("since", ["", "10 minutes", "-5m", "m10", "10m; reboot", "yesterday"])
def test_since_refuses_the_rest_before_any_node_is_asked(since: str) -> None:
    with pytest.raises(InputError, match="give a duration such as 10m"):
        check_since(since)


# -- lines in time order -------------------------------------------------------------------------


def test_ranks_are_interleaved_by_their_times() -> None:
    merge: Interleave[str, str] = Interleave(["r0", "r1"], hold_s=math.inf)
    merge.push("r0", 1.0, "a", now=0.0)
    merge.push("r0", 3.0, "c", now=0.0)
    assert merge.ready(0.0) == []  # r1 may still have an earlier line
    merge.push("r1", 2.0, "b", now=0.1)
    assert merge.ready(0.1) == [("r0", "a"), ("r1", "b")]  # c waits for r1's next line
    merge.push("r1", None, "b2", now=0.2)  # no time: the time of the line before it
    assert merge.ready(0.2) == [("r1", "b2")]
    merge.close("r1")
    assert merge.ready(0.3) == [("r0", "c")] and not merge.done
    merge.close("r0")
    assert merge.done


def test_a_silent_rank_holds_a_line_only_so_long() -> None:
    merge: Interleave[str, str] = Interleave(["head", "worker"], hold_s=0.5)
    merge.push("head", 10.0, "stats", now=100.0)
    assert merge.ready(100.2) == [] and merge.wait_s(100.2) == pytest.approx(0.3)
    assert merge.ready(100.5) == [("head", "stats")] and merge.wait_s(100.5) is None
    merge.push("head", 9.0, "late", now=101.0)  # a stream never runs backwards
    merge.push("worker", 9.5, "w", now=101.0)
    assert merge.ready(101.0) == [("worker", "w")]  # head's late line counts as at 10.0


# -- the command on the simulated fleet ----------------------------------------------------------


def cockpit(fleet: SimFleet, *args: str) -> list[str]:
    return [sys.executable, "-m", "cockpit", "--inventory", str(fleet.inventory_dir), *args]


def run(fleet: SimFleet, state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real command, as an operator runs it (stdout a pipe)."""
    env = {**os.environ, "COLUMNS": "160", "COCKPIT_STATE_DIR": str(state)}
    return subprocess.run(cockpit(fleet, *args), capture_output=True, text=True, env=env,
                          timeout=120, check=False)  # fmt: skip


def follow(fleet: SimFleet, state: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "COCKPIT_STATE_DIR": str(state)}
    return subprocess.Popen(cockpit(fleet, "logs", "-f", *args), text=True, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip


def read_until(proc: subprocess.Popen[str], wanted: str, timeout: float = 30.0) -> list[str]:
    """The follow's lines up to the first that contains `wanted`."""
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        assert line, f"the follow ended early: {lines[-5:]}"
        lines.append(line.rstrip("\n"))
        if wanted in line:
            return lines
    raise AssertionError(f"no {wanted!r} within {timeout} s: {lines[-5:]}")


def log_readers(fleet: SimFleet) -> list[int]:
    """The fleet's processes that read a container's log (`docker logs`)."""
    found = []
    for pid in fleet.leftover_processes():
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"logs" in argv:
            found.append(pid)
    return found


def test_logs_of_a_served_lane(fleet: SimFleet, state_dir: Path) -> None:
    up = run(fleet, state_dir, "launch", "-r", QWEN, "-c", "2nodes-dac",
             "--boot-timeout", str(BOOT_TIMEOUT))  # fmt: skip
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        _logs_of_a_served_lane(fleet, state_dir)
    finally:
        down = run(fleet, state_dir, "stop", "--lane", QWEN)
        assert down.returncode == 0, down.stdout + down.stderr
    gone = run(fleet, state_dir, "logs", "--lane", QWEN)
    assert gone.returncode == 2 and gone.stdout == ""
    assert gone.stderr == f"error: {QWEN} runs nowhere: no container of it, running or exited\n"


def _logs_of_a_served_lane(fleet: SimFleet, state: Path) -> None:
    head = run(fleet, state, "logs", "--lane", QWEN)
    assert head.returncode == 0 and head.stderr == "", head.stderr
    lines = head.stdout.splitlines()
    assert all(line.startswith("dgx1/r0 | ") for line in lines), lines[:3]
    assert any("Application startup complete." in line for line in lines)
    assert any("Engine 000:" in line or "Starting vLLM" in line for line in lines)

    worker = run(fleet, state, "logs", "--lane", QWEN, "--rank", "1", "--cluster", "2nodes-dac")
    assert worker.returncode == 0 and worker.stdout.startswith("dgx2/r1 | ")
    assert {line.split(" | ")[0] for line in worker.stdout.splitlines()} == {"dgx2/r1"}

    every = run(fleet, state, "logs", "--lane", QWEN, "--all", "-t")
    assert every.returncode == 0, every.stderr
    tagged = [line.split(" | ", 1) for line in every.stdout.splitlines()]
    assert {tag for tag, _ in tagged} == {"dgx1/r0", "dgx2/r1"}
    times = [text.split(" ", 1)[0] for _, text in tagged]
    assert times == sorted(times), "interleaved by the nodes' clocks"  # fixed-width RFC 3339
    assert len(tagged) == len(lines) + len(worker.stdout.splitlines())

    future = run(fleet, state, "logs", "--lane", QWEN, "--since", "2099-01-01T00:00:00Z")
    assert future.returncode == 0 and future.stdout == ""

    for args, error in [
        (("--rank", "5"), f"error: {QWEN} on 2nodes-dac has no container for rank 5 (ranks: 0 on dgx1, 1 on dgx2)"),
        (("--rank", "1", "--all"), "error: --rank and --all exclude each other: one rank, or every rank"),
        (("--rank", "-1"), "error: Invalid value for '--rank': -1 is out of range: give a number at least 0 and at most 4096 (cockpit logs --help)"),
        (("--since", "10 minutes"), "error: --since '10 minutes': give a duration such as 10m, 1h30m or 45s, or a time such as 2026-10-02T19:06:00Z"),
        (("--cluster", "4nodes-switch"), f"error: {QWEN} does not run on 4nodes-switch (its clusters: dgx56-switch, 2nodes-dac)"),
    ]:  # fmt: skip
        refused = run(fleet, state, "logs", "--lane", QWEN, *args)
        assert (refused.returncode, refused.stdout, refused.stderr) == (2, "", error + "\n"), args
    unknown = run(fleet, state, "logs", "--lane", "qwen3-0.6b")
    assert unknown.returncode == 2 and len(unknown.stderr.splitlines()) == 1, unknown.stderr

    # -f: the backlog, then the lines the engine writes from now on, until a signal ends it
    proc = follow(fleet, state, "--lane", QWEN, "--all")
    try:
        read_until(proc, "Application startup complete.")
        port = load_inventory(fleet.inventory_dir).serve_port
        url = f"http://{fleet.nodes[0].host}:{port}/v1/models"
        assert httpx.get(url, timeout=10).status_code == 200
        assert read_until(proc, '"GET /v1/models HTTP/1.1" 200')[-1].startswith("dgx1/r0 | ")
        assert log_readers(fleet), "the follow reads on the nodes"
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 128 + signal.SIGINT and err == "", err
    deadline = time.monotonic() + 10
    while log_readers(fleet) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert log_readers(fleet) == [], "no `docker logs -f` left on the nodes"

    # `| head`: once the reader has what it wanted, the follow ends quietly at its next line
    env = {**os.environ, "COCKPIT_STATE_DIR": str(state)}
    command = shlex.join(cockpit(fleet, "logs", "-f", "--lane", QWEN))
    piped = subprocess.Popen(["bash", "-c", f"{command} | head -n 2 >/dev/null; echo ${{PIPESTATUS[0]}}"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    deadline = time.monotonic() + 30
    while piped.poll() is None and time.monotonic() < deadline:
        httpx.get(url, timeout=10)  # a new line for the follow to write
        time.sleep(0.2)
    out, err = piped.communicate(timeout=10)
    assert (out, err) == ("0\n", "")

    # a follow ends by itself, exit 0, once the containers it follows stop
    proc = follow(fleet, state, "--lane", QWEN, "--all")
    try:
        read_until(proc, "Application startup complete.")
        for node, rank in (("dgx2", 1), ("dgx1", 0)):
            ssh = ["/usr/bin/ssh", "-F", str(fleet.ssh_config), "-o", "BatchMode=yes", node]
            stopped = subprocess.run([*ssh, f"docker stop cockpit-{QWEN}-r{rank}"],
                                     capture_output=True, timeout=60, check=False)  # fmt: skip
            assert stopped.returncode == 0, stopped.stderr
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and err == "", err

    # an exited rank: its log up to its end, and a follow of it says why it ends at once
    ended = run(fleet, state, "logs", "-f", "--lane", QWEN, "--rank", "1")
    assert ended.returncode == 0 and ended.stdout.startswith(worker.stdout)
    assert ended.stderr == "note: dgx2/r1's container has exited: its log ends there\n"
