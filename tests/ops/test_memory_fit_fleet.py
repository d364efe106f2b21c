"""The memory fit on the simulated fleet, over real SSH: read on the head, shown in the plan and in
preflight, and a lane vLLM would refuse to start refused before anything starts (exit 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from subprocess import CompletedProcess

import pytest

from cockpit_sim.fleet import SimFleet
from tests.ops.conftest import QWEN, containers

FLASH2 = "mimo26-flash-mopd-2x-sparkring"
TIGHT = "qwen3-0.6b-2x-tight"


def cockpit_cli(fleet: SimFleet, state: Path, *args: str) -> CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "COCKPIT_STATE_DIR": str(state)}
    return subprocess.run(
        [sys.executable, "-m", "cockpit", "--inventory", str(fleet.inventory_dir), *args],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip


@pytest.fixture
def tight(fleet: SimFleet) -> Iterator[Path]:
    """A copy of the Qwen lane at gpu_memory_utilization 0.03: 3.6 GiB a rank, less than the
    weights and runtime, so vLLM would refuse to start it."""
    path = fleet.inventory_dir / f"{TIGHT}.toml"
    text = (fleet.inventory_dir / f"{QWEN}.toml").read_text()
    text = text.replace(f'name = "{QWEN}"', f'name = "{TIGHT}"')
    path.write_text(text.replace("gpu_memory_utilization = 0.5", "gpu_memory_utilization = 0.03"))
    yield path
    path.unlink()


def test_fit_reads_the_snapshot_on_the_head_node(fleet: SimFleet, state_dir: Path) -> None:
    flash = cockpit_cli(fleet, state_dir, "fit", "-r", FLASH2, "-c", "2nodes-dac")
    assert flash.returncode == 0, flash.stdout + flash.stderr
    assert f"{FLASH2} on 2nodes-dac: TP2, snapshot read on dgx1" in flash.stdout
    assert "weights 87.0 GiB + runtime 3.3 GiB + KV 11.4 GiB (≈ 600K tokens)" in flash.stdout
    assert "fits 1 of 16 sequences at 524,288 tokens" in flash.stdout
    pro = cockpit_cli(fleet, state_dir, "fit", "-r", "mimo26-pro-mopd-8x-sparkring",
                      "--format", "json")  # fmt: skip
    assert pro.returncode == 0, pro.stderr
    data = json.loads(pro.stdout)
    assert data["cluster"] == "8nodes-switch" and data["fits"] is True
    assert abs(data["kv_pool_gib"] - 26.76) < 0.27 and data["at_once"] == 6


def test_a_lane_vllm_would_refuse_is_refused_before_it_starts(
    fleet: SimFleet, state_dir: Path, tight: Path
) -> None:
    field = f"{tight}: serve.gpu_memory_utilization: gpu_memory_utilization 0.03 gives 3.6 GiB"
    fit = cockpit_cli(fleet, state_dir, "fit", "-r", TIGHT, "-c", "2nodes-dac")
    assert fit.returncode == 2, fit.stdout + fit.stderr
    assert "does not fit: weights and runtime leave no room for KV" in fit.stdout
    assert f"refused: {field}" in fit.stderr and "no gpu_memory_utilization" not in fit.stderr
    launch = cockpit_cli(fleet, state_dir, "launch", "-r", TIGHT, "-c", "2nodes-dac")
    assert launch.returncode == 2, launch.stdout + launch.stderr
    lines = launch.stdout.splitlines()
    plan = next(i for i, line in enumerate(lines) if line.startswith("launch: "))
    assert lines[plan + 1].startswith("  memory per rank: weights 0.7 GiB + runtime 3.3 GiB")
    assert "info: memory per rank: weights 0.7 GiB" in launch.stdout  # preflight, every node read
    assert f"error: {field}" in launch.stdout
    assert f"refused: preflight refused {TIGHT} on 2nodes-dac: {field}" in launch.stdout
    assert containers(fleet, "dgx1") == [] and containers(fleet, "dgx2") == []
