"""The operations on the simulated fleet, over real SSH: every "Done when" item of issue 5."""

from __future__ import annotations

import asyncio
import getpass
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from subprocess import CompletedProcess

import httpx

from cockpit.cli.ops_cmds import NO_ANSWER
from cockpit.events import (
    Notice,
    OpEvent,
    Planned,
    Progress,
    StepFinished,
    StepStarted,
)
from cockpit.ops.launch import launch
from cockpit.ops.locks import LockRecord, NodeLocks, new_record
from cockpit.ops.stop import stop
from cockpit.ops.switch import switch
from cockpit.ops.sync import sync_image
from cockpit.telemetry.boot import BootPhase
from cockpit_sim.fleet import SimFleet
from tests.ops.conftest import BOOT_TIMEOUT, PINNED, QWEN, Cockpit, containers, finished, run


def head_phases(events: list[OpEvent], node: str) -> list[str]:
    return [
        e.step.removeprefix("boot/")
        for e in events
        if isinstance(e, StepStarted) and e.node == node and e.step.startswith("boot/")
    ]


async def test_clean_launch_to_ready_then_stop_is_idempotent(cockpit: Cockpit) -> None:
    recipe = cockpit.recipe(QWEN)
    image = next(
        i for i in cockpit.fleet.images("dgx2") if i.get("SimRepo") == recipe.image.repository
    )
    cockpit.fleet.add_image("dgx2", {**image, "RepoDigests": []})  # --sync-image re-attaches it
    events = await run(launch(cockpit.ctx, recipe, "2nodes-dac", sync_image=True,
                              boot_timeout_s=BOOT_TIMEOUT))  # fmt: skip
    end = finished(events)
    assert end.ok and end.exit_code == 0, end.summary
    assert isinstance(events[0], Planned)
    steps = [e.step for e in events if isinstance(e, StepFinished) and e.node is None]
    assert steps == ["lock", "preflight", "preflight", "boot", "ready", "watch"]
    assert any(isinstance(e, StepFinished) and e.op == "sync" and e.node == "dgx2" and e.ok
               for e in events)  # fmt: skip
    phases = head_phases(events, "dgx1")
    order = [p.value for p in BootPhase]
    assert phases[0] == "starting" and phases[-1] == "ready"
    assert "loading weights" in phases and "capturing graphs" in phases
    firsts = [order.index(p) for p in dict.fromkeys(phases)]  # each phase where it first began
    assert firsts == sorted(firsts)
    async with httpx.AsyncClient() as client:
        url = f"http://{cockpit.inventory.nodes['dgx1'].host}:{cockpit.inventory.serve_port}/health"
        assert (await client.get(url)).status_code == 200
    assert cockpit.ctx.history.last_seconds(QWEN, "2nodes-dac") is not None
    first = finished(await run(stop(cockpit.ctx, lane=QWEN)))
    assert first.ok and "stopped" in first.summary
    assert containers(cockpit.fleet, "dgx1") == [] and containers(cockpit.fleet, "dgx2") == []
    again = finished(await run(stop(cockpit.ctx, lane=QWEN)))
    assert again.ok and "nothing to stop" in again.summary


async def test_preflight_lists_every_refusal_at_once(cockpit: Cockpit) -> None:
    fleet = cockpit.fleet
    qwen_id = next(i["Id"] for i in fleet.images("dgx1") if "Qwen" in json.dumps(i)
                   or "vllm-openai" in i.get("SimRepo", ""))  # fmt: skip
    fleet.remove_image("dgx1", qwen_id)
    fleet.corrupt_snapshot("dgx2", "Qwen/Qwen3-0.6B")
    busy = await cockpit.pool.run("dgx2", [
        "docker", "run", "-d", "--name", "other", "--label", "cockpit.lane=prod-4x",
        "--label", "cockpit.cluster=4nodes-switch", "--entrypoint", "sleep", qwen_id, "600",
    ])  # fmt: skip
    assert busy.ok, busy.stderr
    events = await run(launch(cockpit.ctx, cockpit.recipe(PINNED), "2nodes-dac"))
    end = finished(events)
    assert end.exit_code == 2
    errors = [e.message for e in events if isinstance(e, Notice)]
    assert any("not present by digest on dgx1" in m and "sync-image" in m for m in errors)
    checks = {e.check for e in events if isinstance(e, Notice) and "digest" in e.message}
    assert checks == {"image"}  # named, so the TUI can offer sync-then-launch as the fix
    assert any("production lane prod-4x runs on dgx2" in m for m in errors)
    assert any("snapshot on dgx2" in m and "does not match" in m for m in errors)
    assert not any(isinstance(e, StepStarted) and e.step == "start" for e in events)
    assert [c["Name"] for c in containers(fleet, "dgx1")] == []


async def test_unreachable_node_is_refused(cockpit: Cockpit) -> None:
    cockpit.fleet.stop_node("dgx2")
    end = finished(await run(launch(cockpit.ctx, cockpit.recipe(QWEN), "2nodes-dac")))
    assert end.exit_code == 2 and "dgx2 is unreachable" in end.summary


async def test_crash_mid_boot_rolls_back_every_rank(cockpit: Cockpit) -> None:
    cockpit.fleet.set_fault("dgx2", "weights_crash")
    events = await run(launch(cockpit.ctx, cockpit.recipe(QWEN), "2nodes-dac",
                              boot_timeout_s=BOOT_TIMEOUT))  # fmt: skip
    end = finished(events)
    assert end.exit_code == 1
    failure = next(e for e in events if isinstance(e, Notice) and e.line)
    assert failure.node == "dgx2" and "rank 1 on dgx2" in failure.message, failure
    assert "Error" in failure.line or "error" in failure.line
    assert containers(cockpit.fleet, "dgx1") == [] and containers(cockpit.fleet, "dgx2") == []


async def test_a_rank_docker_refuses_reports_the_daemons_reason(cockpit: Cockpit) -> None:
    """`docker run` ends with its help hint: the notice carries the reason before it, and the
    container the daemon made (created, never started) is rolled back."""
    cockpit.fleet.set_fault("dgx2", "no-container-toolkit")
    events = await run(launch(cockpit.ctx, cockpit.recipe(QWEN), "2nodes-dac",
                              boot_timeout_s=BOOT_TIMEOUT))  # fmt: skip
    assert finished(events).exit_code == 1
    failure = next(e for e in events if isinstance(e, Notice) and e.line)
    assert failure.node == "dgx2" and "did not start" in failure.message
    assert failure.line == 'could not select device driver "" with capabilities: [[gpu]]'
    assert containers(cockpit.fleet, "dgx2") == []


async def test_sync_restores_the_digest_so_a_launch_by_digest_works(cockpit: Cockpit) -> None:
    fleet = cockpit.fleet
    recipe = cockpit.recipe(QWEN)
    image = next(i for i in fleet.images("dgx1") if i.get("SimRepo") == recipe.image.repository)
    fleet.remove_image("dgx2", image["Id"])
    fleet.remove_image("dgx3", image["Id"])
    fleet.add_image("dgx4", {**image, "RepoDigests": []})  # loaded from a tar: id, no digest
    refused = finished(await run(launch(cockpit.ctx, recipe, "2nodes-dac")))
    assert refused.exit_code == 2 and "not present by digest on dgx2" in refused.summary
    events = await run(sync_image(cockpit.ctx, recipe, "4nodes-switch"))
    assert finished(events).ok, finished(events).summary
    planned = events[0]
    assert isinstance(planned, Planned)
    assert planned.summary == "transfer dgx1 → dgx2 → dgx3, re-attach digest on dgx4"
    assert not [e for e in events if isinstance(e, Notice)]  # no hop failed, nothing retried
    for node in ("dgx2", "dgx3", "dgx4"):
        after = next(i for i in fleet.images(node) if i["Id"] == image["Id"])
        assert after["RepoDigests"] == image["RepoDigests"], node
    end = finished(await run(launch(cockpit.ctx, recipe, "2nodes-dac",
                                    boot_timeout_s=BOOT_TIMEOUT)))  # fmt: skip
    assert end.ok, end.summary


async def test_peer_failure_mid_sync_leaves_the_others_synced(cockpit: Cockpit) -> None:
    fleet = cockpit.fleet
    recipe = cockpit.recipe(QWEN)
    image = next(i for i in fleet.images("dgx3") if i.get("SimRepo") == recipe.image.repository)
    fleet.remove_image("dgx3", image["Id"])
    broken = fleet.node_dir("dgx1") / "images.json"
    broken.unlink()
    broken.mkdir()  # dgx1's docker cannot record images any more: every load there fails
    events = await run(sync_image(cockpit.ctx, recipe, "4nodes-switch"))
    end = finished(events)
    planned = events[0]
    assert isinstance(planned, Planned) and "dgx2 → dgx1 → dgx3" in planned.summary
    assert end.exit_code == 1 and end.summary.endswith("failed: dgx1"), end.summary
    notices = [e.message for e in events if isinstance(e, Notice) and e.node == "dgx1"]
    assert any("retrying" in m for m in notices), notices
    synced = next(i for i in fleet.images("dgx3") if i["Id"] == image["Id"])
    assert synced["RepoDigests"] == image["RepoDigests"]


async def test_switch_replaces_one_lane_with_another(cockpit: Cockpit) -> None:
    first = finished(await run(launch(cockpit.ctx, cockpit.recipe(QWEN), "2nodes-dac",
                                      boot_timeout_s=BOOT_TIMEOUT)))  # fmt: skip
    assert first.ok, first.summary
    seen: list[Planned] = []

    async def confirm(planned: Planned) -> bool:
        seen.append(planned)
        return True

    events = await run(switch(cockpit.ctx, cockpit.recipe(PINNED), "2nodes-dac",
                              confirm=confirm, boot_timeout_s=BOOT_TIMEOUT))  # fmt: skip
    end = finished(events)
    assert end.ok, end.summary
    assert (
        "stop qwen3-0.6b-2x" in seen[0].summary and "image present on every node" in seen[0].summary
    )
    lanes = {c["Config"]["Labels"]["cockpit.lane"] for n in ("dgx1", "dgx2")
             for c in containers(cockpit.fleet, n)}  # fmt: skip
    assert lanes == {PINNED}

    cockpit.fleet.set_fault("dgx2", "weights_crash")
    back = await run(switch(cockpit.ctx, cockpit.recipe(QWEN), "2nodes-dac",
                            boot_timeout_s=BOOT_TIMEOUT))  # fmt: skip
    failed = finished(back)
    assert failed.exit_code == 1
    assert failed.summary.endswith("running now: nothing (no lane on dgx1, dgx2)"), failed.summary
    etas = [e.eta_s for e in back if isinstance(e, Progress) and e.step == "boot"]
    assert etas and all(eta is not None for eta in etas)  # from the first boot of QWEN here


async def test_a_second_launch_on_locked_nodes_is_refused(cockpit: Cockpit) -> None:
    other = NodeLocks(cockpit.pool, new_record("launch", "someone-else"))
    assert await other.acquire(["dgx2"]) == []
    try:
        end = finished(await run(launch(cockpit.ctx, cockpit.recipe(QWEN), "2nodes-dac")))
    finally:
        await other.release()
    assert end.exit_code == 2
    assert (
        "dgx2 is locked: held by" in end.summary
        and "for operation launch someone-else" in end.summary
    )
    assert containers(cockpit.fleet, "dgx1") == []


async def test_two_concurrent_launches_one_wins(cockpit: Cockpit, state_dir: Path) -> None:
    rival = Cockpit(cockpit.fleet, state_dir)
    try:
        ends = await asyncio.gather(
            run(
                launch(cockpit.ctx, cockpit.recipe(QWEN), "2nodes-dac", boot_timeout_s=BOOT_TIMEOUT)
            ),
            run(launch(rival.ctx, rival.recipe(QWEN), "2nodes-dac", boot_timeout_s=BOOT_TIMEOUT)),
        )
    finally:
        await rival.pool.close()
    codes = sorted(finished(e).exit_code for e in ends)
    assert codes == [0, 2], [finished(e).summary for e in ends]


def cockpit_cli(fleet: SimFleet, state: Path, *args: str, stdin: str = "") -> CompletedProcess[str]:
    """The real `cockpit` command on the fleet's inventory, as an operator runs it."""
    env = {**os.environ, "COLUMNS": "160", "COCKPIT_STATE_DIR": str(state)}
    return subprocess.run(
        [sys.executable, "-m", "cockpit", "--inventory", str(fleet.inventory_dir), *args],
        capture_output=True, text=True, env=env, input=stdin, timeout=120, check=False,
    )  # fmt: skip


def test_cli_dry_run_prints_the_plan_and_changes_nothing(fleet: SimFleet, state_dir: Path) -> None:
    done = cockpit_cli(fleet, state_dir, "launch", "-r", QWEN, "-c", "2nodes-dac", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "rank 1 on dgx2: docker run -d --name cockpit-qwen3-0.6b-2x-r1" in done.stdout
    assert "done: dry run" in done.stdout
    assert containers(fleet, "dgx1") == [] and containers(fleet, "dgx2") == []


def test_cli_exit_codes_launch_switch_unconfirmed_stop(fleet: SimFleet, state_dir: Path) -> None:
    up = cockpit_cli(fleet, state_dir, "launch", "-r", QWEN, "-c", "2nodes-dac",
                     "--boot-timeout", str(BOOT_TIMEOUT))  # fmt: skip
    assert up.returncode == 0, up.stdout + up.stderr
    assert f"done: qwen3-0.6b-2x ready at http://{fleet.nodes[0].host}:" in up.stdout
    declined = cockpit_cli(fleet, state_dir, "switch", "-r", PINNED, "-c", "2nodes-dac",
                           stdin="n\n")  # fmt: skip
    assert declined.returncode == 2 and "not confirmed" in declined.stdout
    assert "stop qwen3-0.6b-2x on dgx1, dgx2" in declined.stdout
    down = cockpit_cli(fleet, state_dir, "stop", "--lane", QWEN)
    assert down.returncode == 0 and "stopped qwen3-0.6b-2x" in down.stdout


def test_cli_switch_with_no_answer_is_refused_naming_the_fix(
    fleet: SimFleet, state_dir: Path
) -> None:
    """Issue 15: without a terminal `switch` exited 1, the code of a failure on the nodes."""
    unanswered = cockpit_cli(fleet, state_dir, "switch", "-r", QWEN, "-c", "2nodes-dac")
    assert unanswered.returncode == 2, unanswered.stdout + unanswered.stderr
    assert unanswered.stderr.splitlines() == [f"error: {NO_ANSWER}"]
    assert "pass --yes" in NO_ANSWER and f"launch {QWEN} on 2nodes-dac" in unanswered.stdout
    assert containers(fleet, "dgx1") == [] and containers(fleet, "dgx2") == []


async def test_a_stale_lock_is_broken_and_said_so(cockpit: Cockpit) -> None:
    dead = LockRecord(getpass.getuser(), socket.gethostname(), dead_pid(), "launch", time.time())
    assert await NodeLocks(cockpit.pool, dead).acquire(["dgx3"]) == []
    ours = NodeLocks(cockpit.pool, new_record("stop"))
    assert await ours.acquire(["dgx3", "dgx4"]) == []
    assert [broken.node for broken in ours.broken] == ["dgx3"]
    said = ours.broken[0].message()
    assert "is gone" in said and "held by" in said
    await ours.release()
    again = NodeLocks(cockpit.pool, new_record("stop"))
    assert await again.acquire(["dgx3"]) == [] and again.broken == []
    await again.release()


def dead_pid() -> int:
    """The pid of a process that has exited (reaped), so no process has it now."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


async def test_stop_reports_an_unreachable_node_and_stops_the_others(cockpit: Cockpit) -> None:
    fleet = cockpit.fleet
    image = fleet.images("dgx1")[0]["Id"]
    for node in ("dgx1", "dgx2"):
        started = await cockpit.pool.run(node, [
            "docker", "run", "-d", "--name", f"held-{node}", "--label", f"cockpit.lane={QWEN}",
            "--entrypoint", "sleep", image, "600",
        ])  # fmt: skip
        assert started.ok, started.stderr
    fleet.stop_node("dgx2")
    events = await run(stop(cockpit.ctx, lane=QWEN))
    end = finished(events)
    assert end.exit_code == 1 and end.summary == f"stopped {QWEN} except on dgx2", end.summary
    assert any(isinstance(e, Notice) and e.node == "dgx2" and "unreachable" in e.message
               for e in events)  # fmt: skip
    assert containers(fleet, "dgx1") == [] and len(containers(fleet, "dgx2")) == 1


async def test_every_operation_says_the_stale_lock_it_takes_over(cockpit: Cockpit) -> None:
    """Issue 19: sync took stale locks over silently (launch warned); one path says it for all."""
    image = cockpit.fleet.images("dgx1")[0]["Id"]
    started = await cockpit.pool.run("dgx1", [
        "docker", "run", "-d", "--name", "held-dgx1", "--label", f"cockpit.lane={QWEN}",
        "--entrypoint", "sleep", image, "600",
    ])  # fmt: skip
    assert started.ok, started.stderr
    operations = {
        "sync": lambda: sync_image(cockpit.ctx, cockpit.recipe(QWEN), "2nodes-dac"),
        "stop": lambda: stop(cockpit.ctx, lane=QWEN),
    }
    for name, operation in operations.items():
        dead = LockRecord(
            getpass.getuser(), socket.gethostname(), dead_pid(), "launch", time.time()
        )
        assert await NodeLocks(cockpit.pool, dead).acquire(["dgx1"]) == []
        events = await run(operation())
        assert finished(events).ok, finished(events).summary
        said = [e.message for e in events if isinstance(e, Notice) and e.node == "dgx1"]
        assert any("stale lock removed" in m and "is gone" in m for m in said), (name, said)
