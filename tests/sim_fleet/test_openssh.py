"""The same node behaviour behind Debian's OpenSSH sshd (one sshd per node)."""

from __future__ import annotations

import hashlib
import os
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

from cockpit_sim.fleet import SimFleet
from tests.fleet_fixtures import connect
from tests.sim_fleet.test_endpoints import group_alive, refuses_a_wrong_host_key, wait_group_gone

pytestmark = pytest.mark.sshd


async def test_exec_env_status_and_streams(sshd_fleet: SimFleet) -> None:
    payload = os.urandom(1 << 20)
    async with connect(sshd_fleet, "dgx2") as conn:
        result = await conn.run('echo "$COCKPIT_SIM_NODE $HOME"; exit 5', check=False)
        echoed = await conn.run("cat", input=payload, encoding=None)
        smi = await conn.run("nvidia-smi --query-gpu=name,memory.used --format=csv,noheader")
    home = sshd_fleet.node_dir("dgx2") / "home"
    assert (result.exit_status, result.stdout) == (5, f"dgx2 {home}\n")
    assert hashlib.sha256(echoed.stdout).digest() == hashlib.sha256(payload).digest()
    assert smi.stdout == "NVIDIA GB10, [N/A]\n"


async def test_closing_the_channel_kills_the_command(sshd_fleet: SimFleet) -> None:
    async with connect(sshd_fleet, "dgx1") as conn:
        process = await conn.create_process("echo $$; sleep 300 & sleep 301")
        pgid = int(await process.stdout.readline())
        assert group_alive(pgid)
        process.close()
        assert await wait_group_gone(pgid), "the command outlived its channel"


async def test_wrong_host_key_is_refused(sshd_fleet: SimFleet, tmp_path: Path) -> None:
    await refuses_a_wrong_host_key(sshd_fleet, tmp_path)


async def test_save_load_between_nodes_and_pull(fleet_factory: Callable[..., SimFleet]) -> None:
    fleet = fleet_factory(2, server="openssh")
    holder = next(i for i in fleet.images("dgx2") if "sparkring" in i["SimRepo"])
    ref = shlex.quote(holder["RepoDigests"][0])
    async with connect(fleet, "dgx2") as conn:
        moved = await conn.run(f"docker save {ref} | ssh dgx1 docker load")
    assert moved.stdout == f"Loaded image ID: {holder['Id']}\n"  # saved by digest: no tag
    async with connect(fleet, "dgx1") as conn:
        fleet.set_registry(up=False)  # else the run would pull the manifest itself
        run = await conn.run(f"docker run -d {ref}", check=False)
        fleet.set_registry(up=True)
        pulled = await conn.run(
            f"docker pull -q {ref} && docker image inspect -f '{{{{.Id}}}}' {ref}"
        )
    assert run.exit_status == 125 and "no such host" in run.stderr
    assert pulled.stdout.splitlines()[-1] == holder["Id"]
