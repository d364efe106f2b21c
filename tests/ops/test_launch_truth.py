"""Issue 19 on the simulated fleet: a launch is ready only when every rank is, and blames right.

Each case is a failure the operators met: a worker's NCCL init failing while the head served (the
launch said "ready", both ranks died 30 s later), a head dying right after the one-token probe, a
worker's weights crash blamed on its victim, a hung head reported as a passed boot deadline.
"""

from __future__ import annotations

import httpx
import pytest

from cockpit.events import Notice, OpEvent, Planned, StepFinished, StepStarted
from cockpit.ops.launch import launch
from cockpit.ops.switch import Served, restore, switch
from tests.ops.conftest import BOOT_TIMEOUT, PINNED, QWEN, Cockpit, containers, finished, run

FLASH_4X = "mimo26-flash-mopd-4x-sparkring"
STALL_S = 6.0


def errors(events: list[OpEvent]) -> list[Notice]:
    return [e for e in events if isinstance(e, Notice) and e.severity.value == "error"]


def no_containers(cockpit: Cockpit, nodes: list[str]) -> bool:
    return all(containers(cockpit.fleet, n) == [] for n in nodes)


async def test_a_worker_nccl_failure_fails_the_launch_with_the_worker_line(
    cockpit: Cockpit,
) -> None:
    cockpit.fleet.set_fault("dgx2", "nccl_timeout")
    events = await run(launch(cockpit.ctx, cockpit.recipe(QWEN), "2nodes-dac",
                              boot_timeout_s=BOOT_TIMEOUT))  # fmt: skip
    end = finished(events)
    assert end.exit_code == 1, end.summary
    cause = errors(events)[0]
    assert cause.node == "dgx2" and "rank 1 on dgx2" in cause.message, cause
    assert "NCCL WARN Call to ibv_modify_qp failed" in cause.line, cause.line
    assert "dgx2" in end.summary and "ibv_modify_qp" in end.summary
    assert no_containers(cockpit, ["dgx1", "dgx2"])


async def test_a_head_that_dies_right_after_the_probe_is_not_ready(cockpit: Cockpit) -> None:
    cockpit.fleet.set_fault("dgx1", "crash_after_probe")
    events = await run(launch(cockpit.ctx, cockpit.recipe(QWEN), "2nodes-dac",
                              boot_timeout_s=BOOT_TIMEOUT))  # fmt: skip
    end = finished(events)
    assert end.exit_code == 1, end.summary
    assert any(isinstance(e, StepStarted) and e.step == "watch" for e in events)
    cause = errors(events)[0]
    assert cause.node == "dgx1" and "rank 0 on dgx1" in cause.message, cause
    assert "Error" in cause.line, cause.line
    assert no_containers(cockpit, ["dgx1", "dgx2"])


@pytest.mark.timing  # the victims' own lines come within the launch's SETTLE_S
async def test_a_weights_crash_on_dgx7_is_blamed_on_dgx7_not_its_victims(
    cockpit: Cockpit,
) -> None:
    cockpit.fleet.set_fault("dgx7", "weights_crash")
    nodes = ["dgx5", "dgx6", "dgx7", "dgx8"]
    try:
        events = await run(launch(cockpit.ctx, cockpit.recipe(FLASH_4X), "dgx58-switch",
                                  boot_timeout_s=BOOT_TIMEOUT))  # fmt: skip
    finally:
        cockpit.fleet.set_fault("dgx7", "weights_crash", on=False)
    end = finished(events)
    assert end.exit_code == 1, end.summary
    cause = errors(events)[0]
    assert cause.node == "dgx7", [(e.node, e.message, e.line) for e in errors(events)]
    assert "SafetensorError" in cause.line, cause.line
    assert end.summary.startswith("rank 2 on dgx7 failed"), end.summary
    victims = [e for e in events if isinstance(e, Notice) and "consequence" in e.message]
    assert victims and all(v.node != "dgx7" for v in victims)
    assert any("Connection closed by peer" in v.line or "died" in v.line for v in victims)
    assert no_containers(cockpit, nodes)


async def test_a_hung_head_is_reported_as_hung_at_its_phase(cockpit: Cockpit) -> None:
    """The stall must outlast the gaps of a healthy boot on a loaded machine (the parallel suite:
    3 s once read a slow step of `starting` as the hang)."""
    cockpit.fleet.set_fault("dgx1", "hang_after_start")
    events = await run(launch(cockpit.ctx, cockpit.recipe(QWEN), "2nodes-dac",
                              boot_timeout_s=BOOT_TIMEOUT, stall_timeout_s=STALL_S))  # fmt: skip
    end = finished(events)
    assert end.exit_code == 1, end.summary
    assert "deadline" not in end.summary, end.summary
    assert end.summary.startswith("head (rank 0) on dgx1 hung at ready"), end.summary
    assert f"no progress for {STALL_S:.0f} s" in end.summary, end.summary
    cause = errors(events)[0]
    assert cause.node == "dgx1" and "No available shared memory broadcast block" in cause.line
    assert no_containers(cockpit, ["dgx1", "dgx2"])


async def test_a_failed_switch_restores_the_lane_that_served_before(cockpit: Cockpit) -> None:
    """Issue 19: a switch whose launch failed left the cluster empty."""
    first = finished(await run(launch(cockpit.ctx, cockpit.recipe(QWEN), "2nodes-dac",
                                      boot_timeout_s=BOOT_TIMEOUT)))  # fmt: skip
    assert first.ok, first.summary
    cockpit.fleet.set_fault("dgx2", "weights_crash")  # the new lane dies on dgx2 ...
    events: list[OpEvent] = []
    async for event in switch(cockpit.ctx, cockpit.recipe(PINNED), "2nodes-dac",
                              boot_timeout_s=BOOT_TIMEOUT, restore_on_failure=True):  # fmt: skip
        events.append(event)
        if isinstance(event, Notice) and event.message.startswith("restoring"):
            cockpit.fleet.set_fault("dgx2", "weights_crash", on=False)  # ... the old one would not
    end = finished(events)
    assert end.exit_code == 1, end.summary
    assert end.summary.startswith("rank 1 on dgx2 failed"), end.summary
    assert end.summary.endswith(f"restored {QWEN} on 2nodes-dac: serving again"), end.summary
    planned = events[0]
    assert isinstance(planned, Planned) and f"if it fails: launch {QWEN} on 2nodes-dac again" in (
        planned.summary
    )
    assert any(isinstance(e, StepFinished) and e.op == "restore" and e.step == "watch" and e.ok
               for e in events)  # fmt: skip
    lanes = {c["Config"]["Labels"]["cockpit.lane"] for n in ("dgx1", "dgx2")
             for c in containers(cockpit.fleet, n)}  # fmt: skip
    assert lanes == {QWEN}
    async with httpx.AsyncClient() as client:
        url = f"http://{cockpit.inventory.nodes['dgx1'].host}:{cockpit.inventory.serve_port}/health"
        assert (await client.get(url)).status_code == 200


async def test_restore_relaunches_what_a_failed_switch_replaced(cockpit: Cockpit) -> None:
    """The TUI's `restore` operation: the lanes the switch recorded, launched again."""
    first = finished(await run(launch(cockpit.ctx, cockpit.recipe(QWEN), "2nodes-dac",
                                      boot_timeout_s=BOOT_TIMEOUT)))  # fmt: skip
    assert first.ok, first.summary
    cockpit.fleet.set_fault("dgx2", "weights_crash")
    previous: list[Served] = []
    failed = finished(await run(switch(cockpit.ctx, cockpit.recipe(PINNED), "2nodes-dac",
                                       boot_timeout_s=BOOT_TIMEOUT, previous=previous)))  # fmt: skip
    assert failed.exit_code == 1 and "running now: nothing" in failed.summary
    assert previous == [Served(QWEN, "2nodes-dac")]
    cockpit.fleet.set_fault("dgx2", "weights_crash", on=False)
    back = finished(await run(restore(cockpit.ctx, previous, boot_timeout_s=BOOT_TIMEOUT)))
    assert back.ok and back.summary == f"restored {QWEN} on 2nodes-dac: serving again", back.summary
