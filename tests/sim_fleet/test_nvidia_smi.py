"""nvidia-smi on a simulated GB10: formats as the real tool prints them, values follow the load."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

from cockpit_sim.fleet import SimFleet
from cockpit_sim.tools.nvidia_smi import IDLE_C, settle
from tests.fleet_fixtures import connect

QUERY = "name,memory.total,memory.used,utilization.gpu,power.draw,temperature.gpu,clocks.sm"


def publish_load(node_dir: Path, **load: float | int | str) -> None:
    (node_dir / "gpu_load.json").write_text(json.dumps({"ts": time.time(), **load}))


async def test_csv_formats_on_an_idle_node(sim_fleet: SimFleet) -> None:
    async with connect(sim_fleet, "dgx6") as conn:
        full = await conn.run(f"nvidia-smi --query-gpu={QUERY} --format=csv")
        bare = await conn.run(f"nvidia-smi --query-gpu={QUERY} --format=csv,noheader,nounits")
        bad = await conn.run("nvidia-smi --query-gpu=bogus --format=csv", check=False)
    header, row = full.stdout.splitlines()
    assert header == (
        "name, memory.total [MiB], memory.used [MiB], utilization.gpu [%], power.draw [W], "
        "temperature.gpu, clocks.current.sm [MHz]"
    )
    name, total, used, util, power, temp, clock = row.split(", ")
    assert (name, total, used, util) == ("NVIDIA GB10", "[N/A]", "[N/A]", "0 %")
    assert power.endswith(" W") and 10.5 < float(power[:-2]) < 12 and clock.endswith(" MHz")
    assert abs(int(temp) - IDLE_C) <= 1
    cells = bare.stdout.strip().split(", ")
    assert cells[:4] == ["NVIDIA GB10", "[N/A]", "[N/A]", "0"] and float(cells[4]) < 12
    assert (bad.exit_status, bad.stdout.strip()) == (
        2,
        'Field "bogus" is not a valid field to query.',
    )


async def test_values_follow_the_engine_load(small_fleet: SimFleet) -> None:
    node_dir = small_fleet.node_dir("dgx1")
    async with connect(small_fleet, "dgx1") as conn:
        await conn.run("nvidia-smi --query-gpu=temperature.gpu --format=csv")
        publish_load(
            node_dir,
            util=97,
            power_w=92.5,
            sm_clock_mhz=2405,
            mem_used_mib=98000,
            pid=os.getpid(),
            phase="decode",
            process_name="VLLM::Worker_TP0",
        )
        await_time = time.time()
        loaded = await conn.run(
            "nvidia-smi --query-gpu=utilization.gpu,power.draw,clocks.sm,temperature.gpu,pstate "
            "--format=csv,noheader,nounits"
        )
        apps = await conn.run(
            "nvidia-smi --query-compute-apps=pid,process_name,used_gpu_memory --format=csv"
        )
        table = await conn.run("nvidia-smi")
    util, power, clock, temp, pstate = loaded.stdout.strip().split(", ")
    assert (util, power, clock, pstate) == ("97", "92.50", "2405", "P0")
    assert IDLE_C <= int(temp) < 60, "temperature lags the power step"
    assert apps.stdout == (
        f"pid, process_name, used_gpu_memory [MiB]\n{os.getpid()}, VLLM::Worker_TP0, 98000 MiB\n"
    )
    assert "NVIDIA GB10" in table.stdout and "Not Supported" in table.stdout
    assert " 97%      Default |" in table.stdout and "VLLM::Worker_TP0" in table.stdout
    assert time.time() - await_time < 5


def test_temperature_settles_towards_the_power_target() -> None:
    assert settle(35.0, 65.0, 0.0, 1.0) == 35.0
    halfway = settle(35.0, 65.0, 20.0 * 0.6931, 1.0)
    assert halfway == pytest.approx(50.0, abs=0.01)
    assert settle(35.0, 65.0, 10.0 * 0.6931, 2.0) == pytest.approx(halfway, abs=0.01)


async def test_loop_mode_streams_until_the_channel_closes(sim_fleet: SimFleet) -> None:
    async with connect(sim_fleet, "dgx7") as conn:
        process = await conn.create_process(
            "echo $$; nvidia-smi --query-gpu=utilization.gpu,power.draw --format=csv,noheader "
            "-lms 100"
        )
        pgid = int(await process.stdout.readline())
        lines = [await process.stdout.readline() for _ in range(4)]
        process.close()
    assert all(line.startswith("0 %, ") and line.endswith(" W\n") for line in lines)
    for _ in range(100):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("nvidia-smi loop outlived its channel")


async def test_stale_load_reads_idle(small_fleet: SimFleet) -> None:
    node_dir = small_fleet.node_dir("dgx2")
    (node_dir / "gpu_load.json").write_text(
        json.dumps({"ts": time.time() - 60, "util": 99, "power_w": 100.0, "pid": os.getpid()})
    )
    async with connect(small_fleet, "dgx2") as conn:
        result = await conn.run(
            "nvidia-smi --query-gpu=utilization.gpu,power.draw --format=csv,noheader,nounits"
        )
    util, power = result.stdout.strip().split(", ")
    assert util == "0" and float(power) < 12


async def test_list_query_and_refusal_forms(sim_fleet: SimFleet) -> None:
    """The forms peers use: -L / --list-gpus (one GB10), -q (-d), compute_cap; an unknown option
    is refused as the real tool refuses it, not answered with the table."""
    async with connect(sim_fleet, "dgx5") as conn:
        short = await conn.run("nvidia-smi -L")
        long = await conn.run("nvidia-smi --list-gpus | wc -l")
        report = await conn.run("nvidia-smi -q")
        memory = await conn.run("nvidia-smi -q -d MEMORY")
        caps = await conn.run(
            "nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader"
        )
        bogus = await conn.run("nvidia-smi --bogus", check=False)
        both = await conn.run("nvidia-smi -L -q", check=False)
    assert re.fullmatch(r"GPU 0: NVIDIA GB10 \(UUID: GPU-[0-9a-f-]{36}\)\n", short.stdout)
    assert long.stdout.strip() == "1"
    lines = report.stdout.splitlines()
    assert "==============NVSMI LOG==============" in lines
    assert "    Product Name                          : NVIDIA GB10" in lines
    assert "        Total                             : N/A" in lines, "unified memory"
    assert any(line.startswith("        GPU Current Temp") for line in lines)
    assert "FB Memory Usage" in memory.stdout and "Temperature" not in memory.stdout
    assert caps.stdout == "NVIDIA GB10, 12.1, 580.95.05\n"
    for refused in (bogus, both):
        assert refused.exit_status == 2 and "Invalid combination" in refused.stdout
        assert "NVIDIA-SMI" not in refused.stdout


async def test_a_compute_app_is_the_containers_process(small_fleet: SimFleet) -> None:
    """A containerised engine shows as the container runs it (`python3`), not as the path of the
    interpreter on the machine running the fleet."""
    node_dir = small_fleet.node_dir("dgx1")
    containers = node_dir / "containers.json"
    saved = containers.read_text()
    record = {"Id": "c0ffee", "Path": "python3", "State": {"Running": True, "Pid": os.getpid()}}
    containers.write_text(json.dumps([record]))
    try:
        publish_load(node_dir, util=40, mem_used_mib=90000, pid=os.getpid(), phase="decode")
        async with connect(small_fleet, "dgx1") as conn:
            apps = await conn.run(
                "nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader"
            )
            pids = await conn.run("nvidia-smi -q -d PIDS")
    finally:
        containers.write_text(saved)
    assert apps.stdout == f"{os.getpid()}, python3\n"
    assert "            Name                          : python3" in pids.stdout.splitlines()
