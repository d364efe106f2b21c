"""The ranks of a simulated lane meet as on a real TP lane (started over SSH as the cockpit does).

NCCL init and the engine's init are collective: the head cannot serve before every worker has
finished its own, and a worker whose NCCL init fails takes the head down (it errors and exits).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from datetime import datetime

import httpx

from cockpit.config import load_inventory
from cockpit.plan.render import LanePlan, RankCommand, plan_lane
from cockpit_sim.fleet import SimFleet
from tests.fleet_fixtures import connect

STARTUP = "Application startup complete."


def lane(fleet: SimFleet, recipe: str, cluster: str) -> LanePlan:
    inventory = load_inventory(fleet.inventory_dir)
    return plan_lane(inventory, inventory.recipes[recipe], inventory.clusters[cluster])


async def start(fleet: SimFleet, rank: RankCommand) -> None:
    async with connect(fleet, rank.node) as conn:
        await conn.run(rank.start_line, input=rank.env_file, check=True)


async def logs(fleet: SimFleet, rank: RankCommand) -> list[tuple[float, str]]:
    """The container's log lines with their time (`docker logs -t`)."""
    async with connect(fleet, rank.node) as conn:
        out = (await conn.run(f"docker logs -t {rank.container}", check=True)).stdout
    lines = []
    for line in out.splitlines():
        stamp, _, text = line.partition(" ")
        moment = datetime.strptime(stamp[:26], "%Y-%m-%dT%H:%M:%S.%f").timestamp()
        lines.append((moment, text))
    return lines


def first(lines: list[tuple[float, str]], needle: str) -> float | None:
    return next((t for t, text in lines if needle in text), None)


def healthy(plan: LanePlan) -> bool:
    try:
        return httpx.get(plan.endpoint + "/health", timeout=0.5).status_code == 200
    except httpx.HTTPError:
        return False


def container(fleet: SimFleet, rank: RankCommand) -> dict:
    records = json.loads((fleet.node_dir(rank.node) / "containers.json").read_text())
    return next(r for r in records if r["Name"] == rank.container)


async def test_the_head_serves_only_once_every_worker_has_booted(
    fleet_factory: Callable[..., SimFleet],
) -> None:
    """dgx5's compile cache holds the b12x autotune, dgx6's does not (a first boot there): the
    worker autotunes for 1540 engine s after NCCL init while the head has nothing left to do."""
    fleet = fleet_factory(6)
    plan = lane(fleet, "mimo26-flash-mopd-2x-sparkring", "dgx56-switch")
    head, worker = plan.ranks
    marker = fleet.node_dir("dgx5") / "cache" / "b12x-models--XiaomiMiMo--MiMo-V2.6-Flash-MOPD.json"
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text('{"candidates": 394}')
    await start(fleet, worker)
    await start(fleet, head)
    deadline = time.monotonic() + 60
    while True:  # the head's state first: the worker's log read after it is at least as recent
        head_log, serving = await logs(fleet, head), healthy(plan)
        worker_log = await logs(fleet, worker)
        if first(worker_log, "Graph capturing finished") is None:
            assert not serving, "the head answers /health while its worker still boots"
            assert first(head_log, STARTUP) is None, "the head started up before its worker"
        elif first(head_log, STARTUP) is not None:
            break
        assert time.monotonic() < deadline, (head_log[-3:], worker_log[-3:])
        await asyncio.sleep(0.1)
    assert healthy(plan)
    worker_log = await logs(fleet, worker)
    served = first(head_log, STARTUP)
    assert served is not None
    assert first(head_log, "autotune: selection cache hit") is not None, "the head skipped it"
    assert (first(worker_log, "Graph capturing finished") or served + 1) <= served
    head_nccl = first(head_log, "Init COMPLETE")
    worker_nccl = first(worker_log, "Init COMPLETE")
    assert head_nccl is not None and worker_nccl is not None
    assert abs(head_nccl - worker_nccl) < 0.5, "NCCL init completes on every rank together"
    # what NCCL claims is what the node shows: its RDMA devices and its socket interface's address
    async with connect(fleet, "dgx5") as conn:
        shown = (await conn.run(
            "ip -4 -o addr show dev enp1s0f0np0; ibdev2netdev", check=True)).stdout  # fmt: skip
    address = shown.split()[3].split("/")[0]
    assert any(f"Bootstrap: Using enp1s0f0np0:{address}<0>" in text for _, text in head_log)
    assert any("NET/IB : Using [0]rocep1s0f0:1/RoCE [1]roceP2p1s0f0:1/RoCE" in text
               for _, text in head_log)  # fmt: skip
    assert "rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)" in shown
    assert "roceP2p1s0f0 port 1 ==> enP2p1s0f0np0 (Up)" in shown


async def test_a_workers_nccl_failure_takes_the_head_down(
    fleet_factory: Callable[..., SimFleet],
) -> None:
    fleet = fleet_factory(2)
    fleet.set_fault("dgx2", "nccl_timeout")
    plan = lane(fleet, "qwen3-0.6b-2x", "2nodes-dac")
    head, worker = plan.ranks
    await start(fleet, worker)
    await start(fleet, head)
    deadline = time.monotonic() + 60
    while container(fleet, head)["State"]["Running"] or not container(fleet, head)["State"].get(
        "FinishedAt"
    ):
        assert not healthy(plan), "the head serves a lane whose worker never finished NCCL init"
        assert time.monotonic() < deadline
        await asyncio.sleep(0.1)
    head_log = [text for _, text in await logs(fleet, head)]
    worker_log = [text for _, text in await logs(fleet, worker)]
    assert container(fleet, head)["State"]["ExitCode"] == 1
    assert not any(STARTUP in line or "Init COMPLETE" in line for line in head_log)
    assert any("Worker proc VllmWorker-1 died unexpectedly" in line for line in head_log)
    assert any("ibv_modify_qp failed" in line for line in worker_log)
    assert container(fleet, worker)["State"]["ExitCode"] == 1
