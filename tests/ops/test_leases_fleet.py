"""Locks are leases, judged by the node's clock (issue 31), on the simulated fleet over real SSH.

A lock written by a cockpit on another host (a fresh `since`, `ttl_s` 21600, never renewed) used
to refuse `launch` and `stop` for six hours, with no way out; an empty lock file blocked forever.
"""

from __future__ import annotations

import asyncio
import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from cockpit.cli.ops_cmds import NO_BREAK_ANSWER
from cockpit.events import LockBroken, StepFinished
from cockpit.history.recorder import who
from cockpit.history.store import HistoryStore
from cockpit.ops.context import Emit, OpLocks, Outcome
from cockpit.ops.launch import launch
from cockpit.ops.locks import LEASE, Lease, NodeLock, NodeLocks, new_record
from cockpit.ops.stop import stop
from cockpit.ssh import SshPool
from tests.ops.conftest import BOOT_TIMEOUT, QWEN, Cockpit, containers, finished, run
from tests.ops.test_ops_fleet import cockpit_cli

SHORT = Lease(seconds=4.0, renew_every_s=1.0)
"""A lease short enough to outlive in a test; the rules are the same at any length."""

FOREIGN = {
    "user": "alice",
    "host": "ops-laptop",
    "pid": 4242,
    "operation": "launch",
    "lane": "mimo-v2-flash",
    "token": "f0reign",
    "ttl_s": 21600,
}
HOLDER_FIX = "fix: wait for alice@ops-laptop's launch to finish (if it is gone, its lock is stale "

_PLANT = """\
dir="$HOME/.cockpit/locks"; mkdir -p -- "$dir"
printf '%s' "$2" > "$dir/$1.lock"
[ "$3" = 0 ] || touch -d "@$(( $(date +%s) - $3 ))" -- "$dir/$1.lock"
"""


async def plant_lock(pool: SshPool, node: str, content: str, age_s: int = 0) -> None:
    """Write a lock file on `node` as another cockpit (or a half-written file) left it, last
    touched `age_s` ago by the node's own clock."""
    done = await pool.run(node, ["bash", "-c", _PLANT, "plant", node, content, str(age_s)])
    assert done.ok, done.stderr


@pytest.fixture(autouse=True)
def no_lock_left(cockpit: Cockpit) -> Iterator[None]:
    """Every lock a test planted or left is gone before the cockpit's clean-up stop and the
    next test of the module."""
    yield
    fleet = cockpit.fleet
    for node in fleet.names:
        for lock in (fleet.node_dir(node) / "home" / ".cockpit" / "locks").glob("*.lock"):
            lock.unlink()


def foreign_lock(since: float) -> str:
    return json.dumps({**FOREIGN, "since": since})


async def held_by_another_cockpit(cockpit: Cockpit) -> None:
    """A container of QWEN on dgx2 under a foreign, live-looking lock (its `since` far ahead)."""
    image = cockpit.fleet.images("dgx2")[0]["Id"]
    started = await cockpit.pool.run("dgx2", [
        "docker", "run", "-d", "--name", "held-dgx2", "--label", f"cockpit.lane={QWEN}",
        "--entrypoint", "sleep", image, "600",
    ])  # fmt: skip
    assert started.ok, started.stderr
    await plant_lock(cockpit.pool, "dgx2", foreign_lock(since=4e9))


async def lock_files(pool: SshPool, node: str) -> str:
    done = await pool.run(node, ["bash", "-c", 'cat -- "$HOME"/.cockpit/locks/*.lock 2>/dev/null'])
    return done.stdout


async def test_a_foreign_lock_never_renewed_is_freed_within_a_lease(cockpit: Cockpit) -> None:
    """Refused while the lease runs (with the way out), taken over once it ran out: by the
    time on the node, not by the record's `since` and `ttl_s`."""
    ctx = replace(cockpit.ctx, lease=SHORT)
    await plant_lock(cockpit.pool, "dgx1", foreign_lock(since=4e9))  # a `since` in 2096
    refused = finished(await run(launch(ctx, cockpit.recipe(QWEN), "2nodes-dac")))
    assert refused.exit_code == 2 and "dgx1 is locked: held by alice@ops-laptop" in refused.summary
    assert HOLDER_FIX in refused.summary and refused.summary.endswith(
        f"s), or cockpit launch -r {QWEN} -c 2nodes-dac --break-lock"
    ), refused.summary
    await asyncio.sleep(SHORT.seconds)
    events = await run(launch(ctx, cockpit.recipe(QWEN), "2nodes-dac", boot_timeout_s=BOOT_TIMEOUT))
    assert finished(events).ok, finished(events).summary
    (taken,) = [e for e in events if isinstance(e, LockBroken)]
    assert taken.node == "dgx1" and taken.holder == "alice@ops-laptop" and not taken.forced
    assert "stale lock removed (not renewed for " in taken.message


async def test_the_default_lease_is_a_minute_by_the_nodes_clock(cockpit: Cockpit) -> None:
    """A lock last touched 61 s ago (the node says so) is stale for every operation; one touched
    20 s ago is not, wherever its holder is; `stop` alone takes over a lock whose holder missed
    a renewal (31 s), so a holder that stopped renewing never keeps a stop waiting."""
    locks = NodeLocks(cockpit.pool, new_record("sync", "x"))
    await plant_lock(cockpit.pool, "dgx3", foreign_lock(since=4e9), age_s=20)
    assert "dgx3 is locked: held by alice@ops-laptop" in str((await locks.acquire(["dgx3"]))[0])
    await plant_lock(cockpit.pool, "dgx3", foreign_lock(since=4e9), age_s=int(LEASE.seconds) + 1)
    assert await locks.acquire(["dgx3"]) == [], await lock_files(cockpit.pool, "dgx3")
    assert re.search(r"stale lock removed \(not renewed for 6[12] s\)", locks.broken[0].message())
    await locks.release()

    image = cockpit.fleet.images("dgx1")[0]["Id"]
    started = await cockpit.pool.run("dgx1", [
        "docker", "run", "-d", "--name", "held-dgx1", "--label", f"cockpit.lane={QWEN}",
        "--entrypoint", "sleep", image, "600",
    ])  # fmt: skip
    assert started.ok, started.stderr
    missed = int(LEASE.missed_renewal_s) + 1
    await plant_lock(cockpit.pool, "dgx1", foreign_lock(since=4e9), age_s=missed)
    refused = finished(await run(launch(cockpit.ctx, cockpit.recipe(QWEN), "2nodes-dac")))
    assert refused.exit_code == 2 and "dgx1 is locked" in refused.summary
    events = await run(stop(cockpit.ctx, lane=QWEN))
    assert finished(events).ok, finished(events).summary
    assert containers(cockpit.fleet, "dgx1") == []
    said = [e.message for e in events if isinstance(e, LockBroken)]
    assert said and "stale lock removed (not renewed for 3" in said[0], said


async def test_an_empty_lock_file_is_stale_after_a_lease_not_before(cockpit: Cockpit) -> None:
    """A node that lost power while a lock was written leaves an empty file: it blocked forever
    (`held by an unreadable lock file ('')`). Fresh, someone may be writing it: it holds."""
    await plant_lock(cockpit.pool, "dgx4", "")
    fresh = NodeLocks(cockpit.pool, new_record("sync", "x"))
    (refused,) = await fresh.acquire(["dgx4"])
    assert "held by an unreadable lock file ('', written 0 s ago)" in str(refused)
    assert "fix: wait for whoever is writing it to finish" in str(refused)
    await plant_lock(cockpit.pool, "dgx4", "", age_s=int(LEASE.seconds))
    old = NodeLocks(cockpit.pool, new_record("sync", "x"))
    assert await old.acquire(["dgx4"]) == []
    assert re.search(
        r"\(an unreadable lock file not written for 6[01] s\)", old.broken[0].message()
    )
    await old.release()
    assert await lock_files(cockpit.pool, "dgx4") == ""


async def test_a_live_holder_keeps_its_lock_by_renewing_it(cockpit: Cockpit) -> None:
    """Held for two leases, renewed all along: a rival is refused at the end; released, the
    renewal stops with it and the node is free."""
    holder = NodeLocks(cockpit.pool, new_record("launch", "mine"), SHORT)
    assert await holder.acquire(["dgx5"]) == []
    await asyncio.sleep(2 * SHORT.seconds)
    rival = NodeLocks(cockpit.pool, new_record("launch", "theirs"), SHORT)
    (refused,) = await rival.acquire(["dgx5"])
    assert "for operation launch mine" in str(refused) and rival.broken == []
    await holder.release()
    assert await lock_files(cockpit.pool, "dgx5") == ""
    await asyncio.sleep(SHORT.renew_every_s * 2)  # a renewal left running would write nothing
    assert await lock_files(cockpit.pool, "dgx5") == ""
    assert await rival.acquire(["dgx5"]) == [] and rival.broken == []
    await rival.release()


async def test_break_lock_asks_then_breaks_a_live_lock_and_history_says_whose(
    cockpit: Cockpit, state_dir: Path
) -> None:
    """`--break-lock` without an answer changes nothing; with `--yes` the foreign lock goes,
    the stop runs, and the history holds a `break-lock` run: who broke it, whose it was."""
    fleet = cockpit.fleet
    await held_by_another_cockpit(cockpit)
    stop_cli = ("stop", "--lane", QWEN, "--break-lock")
    unanswered = await asyncio.to_thread(cockpit_cli, fleet, state_dir, *stop_cli)
    assert unanswered.returncode == 2, unanswered.stdout + unanswered.stderr
    assert unanswered.stderr.splitlines() == [f"error: {NO_BREAK_ANSWER}"]
    assert len(containers(fleet, "dgx2")) == 1 and FOREIGN["token"] in await lock_files(
        cockpit.pool, "dgx2"
    )
    broke = await asyncio.to_thread(cockpit_cli, fleet, state_dir, *stop_cli, "--yes")
    assert broke.returncode == 0, broke.stdout + broke.stderr
    assert "lock broken (--break-lock): held by alice@ops-laptop" in broke.stdout
    assert containers(fleet, "dgx2") == []
    store = HistoryStore.open(state_dir / "history.db")
    try:
        (row,) = [r for r in store.ops(0.0) if r.op == "break-lock"]
    finally:
        store.close()
    assert row.who == who() and row.nodes == ("dgx2",) and row.outcome == "ok"
    assert row.summary.startswith("broke alice@ops-laptop's lock: lock broken (--break-lock)")


async def test_a_lock_refusal_step_says_the_way_out(cockpit: Cockpit) -> None:
    """The failed `lock` step (what the TUI shows) carries the fix line too."""
    await plant_lock(cockpit.pool, "dgx1", foreign_lock(since=4e9))
    events = await run(launch(cockpit.ctx, cockpit.recipe(QWEN), "2nodes-dac"))
    (failed,) = [e for e in events if isinstance(e, StepFinished) and e.step == "lock"]
    assert not failed.ok and HOLDER_FIX in failed.detail


async def test_status_shows_every_cockpits_lock(cockpit: Cockpit, state_dir: Path) -> None:
    """A lock held by someone else appeared nowhere until an operation was refused: `status`
    shows it, in its text and its JSON, live or stale."""
    await plant_lock(cockpit.pool, "dgx1", foreign_lock(since=4e9))
    await plant_lock(cockpit.pool, "dgx2", foreign_lock(since=4e9), age_s=int(LEASE.seconds) + 5)
    fleet = cockpit.fleet
    text = await asyncio.to_thread(cockpit_cli, fleet, state_dir, "status")
    assert "dgx1: locked by alice@ops-laptop for launch mimo-v2-flash (renewed " in text.stdout
    assert re.search(
        r"dgx2: locked by alice@ops-laptop for launch mimo-v2-flash: stale \(not renewed for "
        r"6\d s\), the next operation takes it over",
        text.stdout,
    ), text.stdout
    done = await asyncio.to_thread(cockpit_cli, fleet, state_dir, "status", "--format", "json")
    nodes = {row["node"]: row for row in json.loads(done.stdout)["nodes"]}
    lock = nodes["dgx1"]["lock"]
    assert lock["holder"] == "alice@ops-laptop" and lock["operation"] == "launch"
    assert lock["lane"] == "mimo-v2-flash" and lock["stale"] is None and lock["age_s"] < 30
    assert nodes["dgx2"]["lock"]["stale"] and nodes["dgx3"]["lock"] is None


def answer_on_a_terminal(
    argv: list[str], env: dict[str, str], question: bytes, answer: bytes
) -> tuple[int, str]:
    """Run `argv` on a pseudo-terminal; once `question` is on its screen, type `answer`.
    Returns the exit code and everything the screen showed."""
    main, side = pty.openpty()
    proc = subprocess.Popen(argv, stdin=side, stdout=side, stderr=side, env=env)
    os.close(side)
    screen, deadline = b"", time.monotonic() + 60
    try:
        while question not in screen:
            assert time.monotonic() < deadline, screen.decode(errors="replace")
            if select.select([main], [], [], 1)[0]:
                screen += os.read(main, 65536)
        os.write(main, answer)
        while proc.poll() is None or select.select([main], [], [], 0.2)[0]:
            if select.select([main], [], [], 0.2)[0]:
                try:
                    screen += os.read(main, 65536)
                except OSError:  # the terminal's other side closed with the process
                    break
        return proc.wait(timeout=60), screen.decode(errors="replace")
    finally:
        os.close(main)
        if proc.poll() is None:
            proc.kill()


async def test_break_lock_asks_on_a_terminal_showing_whose_and_no_changes_nothing(
    cockpit: Cockpit, state_dir: Path
) -> None:
    fleet = cockpit.fleet
    await held_by_another_cockpit(cockpit)
    argv = [sys.executable, "-m", "cockpit", "--inventory", str(fleet.inventory_dir),
            "stop", "--lane", QWEN, "--break-lock"]  # fmt: skip
    env = {**os.environ, "COLUMNS": "200", "COCKPIT_STATE_DIR": str(state_dir)}
    question = b"Break this lock? [y/N]: "
    code, screen = await asyncio.to_thread(answer_on_a_terminal, argv, env, question, b"n\n")
    assert code == 2, screen
    assert "dgx2 is locked: held by alice@ops-laptop since 2096-" in screen.split("Break")[0]
    assert "not broken: not confirmed" in screen
    assert len(containers(fleet, "dgx2")) == 1
    assert FOREIGN["token"] in await lock_files(cockpit.pool, "dgx2")


async def test_an_operation_closed_right_after_its_locks_leaves_none(cockpit: Cockpit) -> None:
    """A consumer that stops reading once the locks are taken (a TUI cancelling the run) closes
    the operation before its own clean-up begins: the locks go, their renewal with them (a lock
    renewed by a live process would hold the nodes for as long as that process runs)."""
    operation = launch(cockpit.ctx, cockpit.recipe(QWEN), "2nodes-dac")
    async for event in operation:
        if isinstance(event, StepFinished) and event.step == "lock":
            assert event.ok, event.detail
            break
    await operation.aclose()
    for _ in range(20):
        await asyncio.sleep(0.1)
        if await lock_files(cockpit.pool, "dgx1") + await lock_files(cockpit.pool, "dgx2") == "":
            break
    assert await lock_files(cockpit.pool, "dgx1") + await lock_files(cockpit.pool, "dgx2") == ""
    assert not [t for t in asyncio.all_tasks() if "_renew_loop" in repr(t)]


async def test_a_holder_whose_lock_was_broken_says_so_and_does_not_take_it_back(
    cockpit: Cockpit,
) -> None:
    """Broken by another cockpit's `--break-lock`, a lock is not renewed by its old holder (the
    new holder's lease is its own); the old holder's operation ends saying who holds the node."""
    ctx = replace(cockpit.ctx, lease=SHORT)
    holder, outcome = OpLocks(ctx, Emit("sync", "mine", "2nodes-dac")), Outcome()
    assert [e async for e in holder.acquire(["dgx6"], outcome)][-1].ok
    outcome.done("synced")

    async def yes(node: str, lock: NodeLock) -> bool:
        return True

    rival = NodeLocks(cockpit.pool, new_record("stop", "theirs"), SHORT, breaker=yes)
    assert await rival.acquire(["dgx6"]) == [] and rival.broken[0].forced
    await asyncio.sleep(3 * SHORT.renew_every_s)
    assert rival.record.token in await lock_files(cockpit.pool, "dgx6")
    await holder.release()
    assert outcome.ok and outcome.summary == (
        f"synced (warning: dgx6's lock was broken while this ran (held by {who()} for operation "
        "stop theirs now))"
    )
    assert rival.record.token in await lock_files(cockpit.pool, "dgx6")
    await rival.release()
