"""Two distributions: the product (the root) and the simulator (`sim/`, cockpit-sim).

The product's wheel carries none of the simulator, and the product without it runs every command
but `sim` and `demo`, which say in one line what to install.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from cockpit.cli.main import simulator_missing

ROOT = Path(__file__).resolve().parents[1]
WITHOUT_SIMULATOR = (
    "import sys; sys.modules['cockpit_sim'] = None; sys.argv[0] = 'cockpit'; "
    "from cockpit.cli.main import main; main()"
)


def cockpit_without_simulator(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """The `cockpit` CLI in a process where the simulator cannot be imported."""
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_SIMULATOR, *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=60,
    )


@pytest.mark.parametrize(
    "args",
    [["demo"], ["demo", "--lane", "x@y", "--help"], ["sim", "up", "--nodes", "3"], ["sim"]],
)
def test_sim_and_demo_without_the_simulator_say_what_to_install(args: list[str]) -> None:
    result = cockpit_without_simulator(*args)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"error: {simulator_missing(args[0])}"]
    assert "pip install -e ./sim" in result.stderr and result.stdout == ""


def test_the_other_commands_work_without_the_simulator() -> None:
    lanes = cockpit_without_simulator("--inventory", ROOT / "recipes", "lanes", "--format", "json")
    assert lanes.returncode == 0, lanes.stderr
    assert '"recipe"' in lanes.stdout
    listed = cockpit_without_simulator("--help")
    assert listed.returncode == 0, listed.stderr
    assert "  sim " in listed.stdout and "  status " in listed.stdout
    assert "not installed" in listed.stdout


def _source_copy(target: Path) -> Path:
    """The files both builds read, copied (a build writes build/ and egg-info into its tree)."""
    junk = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "dist")
    target.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, target / name)
    for name in ("cockpit", "recipes", "themes", "sim"):
        shutil.copytree(ROOT / name, target / name, ignore=junk)
    return target


@pytest.mark.slow
def test_the_product_wheel_carries_none_of_the_simulator(tmp_path: Path) -> None:
    src = _source_copy(tmp_path / "src")
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", wheels, src, src / "sim"],
        check=True,
        timeout=600,
    )
    [product_wheel] = wheels.glob("cockpit-*.whl")
    [sim_wheel] = wheels.glob("cockpit_sim-*.whl")
    with zipfile.ZipFile(product_wheel) as wheel:
        product = wheel.namelist()
        metadata = wheel.read("cockpit-0.1.0.dist-info/METADATA").decode()
    with zipfile.ZipFile(sim_wheel) as wheel:
        sim = set(wheel.namelist())

    assert "cockpit/cli/main.py" in product
    assert "cockpit-0.1.0.data/data/share/cockpit/recipes/clusters.toml" in product
    simulator = [n for n in product if "sim" in Path(n).parts[:2] or "cockpit_sim" in n]
    data = (".c", "tokenizer.json", "tokenizer_config.json", "vllm_flags.txt")
    sim_data = [n for n in product if "snapshots" in n or n.endswith(data)]
    assert simulator == [] and sim_data == []
    assert "Requires-Dist: tomli-w" not in metadata  # only the simulator writes TOML with it

    assert {n.split("/")[0] for n in sim} == {"cockpit_sim", "cockpit_sim-0.1.0.dist-info"}
    shipped = {
        p.relative_to(src / "sim").as_posix()
        for p in (src / "sim" / "cockpit_sim").rglob("*")
        if p.is_file()
    }
    assert shipped - sim == set()  # every module and data file: snapshots, tokenizer, C source
    assert {"cockpit_sim/engine/tokenizer/tokenizer.json", "cockpit_sim/tools/frontend.c"} <= sim
