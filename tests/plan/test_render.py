"""Rendered rank commands: golden files for the seed's lanes, the full serve contract, quoting."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from cockpit.config import load_inventory
from cockpit.config.inventory import PROJECT_RECIPES
from cockpit.errors import InputError
from cockpit.plan import plan_lane, redact_argv
from tests.cli_runner import run_cockpit

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "render"
SEED_LANES = [
    ("mimo26-flash-mopd-4x-sparkring", "dgx58-switch"),
    ("mimo26-flash-mopd-2x-sparkring", "2nodes-dac"),
    ("mimo26-pro-mopd-8x-sparkring", "8nodes-switch"),
]


@pytest.mark.parametrize(("recipe", "cluster"), SEED_LANES)
def test_rendered_commands_match_golden(recipe: str, cluster: str) -> None:
    """Pin the exact command lines; regenerate with COCKPIT_UPDATE_GOLDEN=1 after a reviewed change."""
    result = run_cockpit(
        "--inventory", PROJECT_RECIPES, "render", "--recipe", recipe, "--cluster", cluster
    )
    assert result.returncode == 0, result.stderr
    golden = GOLDEN / f"{recipe}@{cluster}.txt"
    if os.environ.get("COCKPIT_UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(result.stdout)
    assert result.stdout == golden.read_text()


def test_pro_8x_carries_the_whole_serve_contract_minus_deviations() -> None:
    result = run_cockpit(
        "--inventory", PROJECT_RECIPES, "render", "--format", "json",
        "--recipe", "mimo26-pro-mopd-8x-sparkring", "--cluster", "8nodes-switch",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    ranks = data["ranks"]
    assert [r["rank"] for r in ranks] == list(range(8))
    assert [r["node"] for r in ranks] == [f"dgx{i}" for i in range(1, 9)]
    for entry in ranks:
        argv = entry["argv"]
        words = set(argv)
        env = entry["env"]
        assert "-e" not in words and argv[argv.index("--env-file") + 1] == "$COCKPIT_ENV_FILE"
        # seed §1 env, and the cluster's [nccl] block (f0 pair on the switch)
        assert env["VLLM_KV_CACHE_LAYOUT"] == "BLHNC"
        assert env["VLLM_LM_HEAD_A16"] == "1" and env["VLLM_MXFP8_LM_HEAD"] == "0"
        assert env["VLLM_USE_V2_MODEL_RUNNER"] == "1"
        assert env["NCCL_IB_EXTENDED_IPV4_GIDS"] == "1" and env["NCCL_ALGO"] == "Ring"
        assert env["NCCL_MIN_NCHANNELS"] == env["NCCL_MAX_NCHANNELS"] == "4"
        assert env["NCCL_P2P_LEVEL"] == "SYS"
        assert env["NCCL_IB_HCA"] == "rocep1s0f0,roceP2p1s0f0" and env["NCCL_IB_GID_INDEX"] == "3"
        assert env["NCCL_SOCKET_IFNAME"] == "enp1s0f0np0"
        assert {"B12X_ROCE_ALLREDUCE_MAX_BYTES", "B12X_ROCE_ALLGATHER_MAX_BYTES"} <= env.keys()
        # the documented deviations: ring-only keys dropped
        assert (
            not {"NCCL_SWITCHLESS_RING_ONLY", "B12X_ROCE_OPPOSITE_PATHS", "B12X_ROCE_PEER_HCA_MAP"}
            & env.keys()
        )

        def flag(name: str, argv: list[str] = argv) -> str:
            return argv[argv.index(name) + 1]

        assert "ghcr.io/fujitsupolycom/sparkring@sha256:c977a2d2" in words
        assert flag("--tensor-parallel-size") == "8" and flag("--nnodes") == "8"
        assert flag("--node-rank") == str(entry["rank"])
        assert flag("--master-addr") == "dgx1.example.lan" and flag("--master-port") == "29501"
        assert ("--headless" in words) == (entry["rank"] > 0)
        assert flag("--port") == "30000"
        assert flag("--max-model-len") == "524288"
        assert flag("--max-num-seqs") == "16" and flag("--max-num-batched-tokens") == "8192"
        assert flag("--gpu-memory-utilization") == "0.85" and flag("--kv-cache-dtype") == "bfloat16"
        spec = json.loads(flag("--speculative-config"))
        assert spec["num_speculative_tokens"] == 5 and spec["load_format"] == "safetensors"
        assert spec["model"].endswith("/snapshots/adea8e2c5373/dflash")
        assert json.loads(flag("--model-loader-extra-config")) == {
            "read_mode": "bounce",
            "io_threads": 8,
        }
        compilation = json.loads(flag("--compilation-config"))
        assert compilation["pass_config"]["fuse_act_quant"] is True
        assert compilation["cudagraph_mode"] == "FULL_AND_PIECEWISE"
        assert max(compilation["cudagraph_capture_sizes"]) == 96
        assert "--no-enable-flashinfer-autotune" in words and "--kernel-config" not in words
        assert "--hf-overrides" in words
        assert any(
            w.endswith("models--XiaomiMiMo--MiMo-V2.6-Pro-MOPD/snapshots/adea8e2c5373")
            for w in argv
        )


def test_launch_order_is_workers_first_head_last() -> None:
    inventory = load_inventory(PROJECT_RECIPES)
    plan = plan_lane(
        inventory,
        inventory.recipe("mimo26-flash-mopd-4x-sparkring"),
        inventory.cluster("dgx58-switch"),
    )
    assert [r.rank for r in plan.launch_order] == [1, 2, 3, 0]
    assert plan.endpoint == "http://dgx5.example.lan:30000"


def test_wrong_cluster_size_is_refused() -> None:
    inventory = load_inventory(PROJECT_RECIPES)
    with pytest.raises(InputError, match="has 8 nodes but the recipe needs 4"):
        plan_lane(
            inventory,
            inventory.recipe("mimo26-flash-mopd-4x-sparkring"),
            inventory.cluster("8nodes-switch"),
        )
    result = run_cockpit(
        "--inventory", PROJECT_RECIPES, "render",
        "--recipe", "mimo26-flash-mopd-4x-sparkring", "--cluster", "8nodes-switch",
    )  # fmt: skip
    assert result.returncode == 2 and "Traceback" not in result.stderr


HOSTILE = [
    "$(touch PWNED)",
    "`touch PWNED`",
    "a; touch PWNED",
    'it\'s "quoted"',
    "two\nlines",
    "  spaces  and\ttabs ",
    "&& touch PWNED || true",
    "*",
    "$HOME",
    "=starts with =",
]
ENV_HOSTILE = [v for v in HOSTILE if "\n" not in v]  # an env value is one line (--env-file)


@pytest.fixture
def hostile_inventory(tmp_path: Path) -> Path:
    """A valid recipe whose free-text values are all shell metacharacters."""
    root = tmp_path / "inv"
    shutil.copytree(PROJECT_RECIPES, root)
    path = root / "qwen3-0.6b-2x.toml"
    text = path.read_text()
    env = "".join(f"HOSTILE_{i} = {json.dumps(value)}\n" for i, value in enumerate(ENV_HOSTILE))
    text = text.replace("[env]\n", "[env]\n" + env)
    text = text.replace(
        'served_model_name = "qwen3-0.6b"', f"served_model_name = {json.dumps(HOSTILE[4])}"
    )
    text = text.replace(
        "enable_prefix_caching = true",
        "enable_prefix_caching = true\n"
        f"extra_args = {{ chat-template = {json.dumps(HOSTILE[2])}, "
        f"override-generation-config = {{ note = {json.dumps(HOSTILE[1])} }} }}",
    )
    path.write_text(text)
    return root


# A docker that records its argv, and what the env file holds and how it is protected.
FAKE_DOCKER = """#!/usr/bin/env python3
import json, os, stat, sys, time
args = sys.argv[1:]
path = args[args.index("--env-file") + 1]
info = os.stat(path)
folder = os.stat(os.path.dirname(path))
record = {"argv": args, "env_file": open(path).read(), "mode": stat.S_IMODE(info.st_mode),
          "folder_mode": stat.S_IMODE(folder.st_mode), "path": path}
open(os.environ["RECORD"], "w").write(json.dumps(record))
if os.environ.get("FAKE_HANG"):
    time.sleep(60)
sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
"""


def _fake_docker(tmp_path: Path) -> dict[str, str]:
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    fake = bindir / "docker"
    fake.write_text(FAKE_DOCKER)
    fake.chmod(0o755)
    return {
        "PATH": f"{bindir}:{os.environ['PATH']}",
        "HOME": str(tmp_path / "home"),
        "RECORD": str(tmp_path / "record.json"),
    }


def test_hostile_values_arrive_as_literal_arguments_and_env(
    hostile_inventory: Path, tmp_path: Path
) -> None:
    """Run each rank's start line through a real bash, its env on stdin, with a fake docker."""
    inventory = load_inventory(hostile_inventory)
    plan = plan_lane(
        inventory, inventory.recipe("qwen3-0.6b-2x"), inventory.cluster("dgx56-switch")
    )
    env = _fake_docker(tmp_path)
    workdir = tmp_path / "work"
    workdir.mkdir()
    for rank in plan.ranks:
        subprocess.run(
            ["bash", "-c", rank.start_line], input=rank.env_file, text=True, cwd=workdir,
            env=env, check=True,
        )  # fmt: skip
        record = json.loads(Path(env["RECORD"]).read_text())
        received = record["argv"]
        expected = list(rank.argv[1:])
        at = expected.index("--env-file") + 1
        assert received[:at] + received[at + 1 :] == expected[:at] + expected[at + 1 :]
        assert HOSTILE[4] in received
        assert received[received.index("--chat-template") + 1] == HOSTILE[2]
        assert json.loads(received[received.index("--override-generation-config") + 1]) == {
            "note": HOSTILE[1]
        }
        assert not any("HOSTILE" in word for word in received)  # no env on the command line
        assert record["env_file"] == rank.env_file
        for i, value in enumerate(ENV_HOSTILE):
            assert f"HOSTILE_{i}={value}\n" in record["env_file"]
        assert record["mode"] == 0o600 and record["folder_mode"] == 0o700
        assert not Path(record["path"]).exists(), "the env file outlived the start"
    assert not list(workdir.iterdir()), "something ran: the command line was not quoted"
    assert not (tmp_path / "PWNED").exists()


def test_the_env_file_is_removed_when_docker_fails_or_the_start_is_killed(
    tmp_path: Path,
) -> None:
    inventory = load_inventory(PROJECT_RECIPES)
    plan = plan_lane(
        inventory, inventory.recipe("qwen3-0.6b-2x"), inventory.cluster("dgx56-switch")
    )
    rank = plan.ranks[0]
    env = _fake_docker(tmp_path)
    failed = subprocess.run(
        ["bash", "-c", rank.start_line], input=rank.env_file, text=True,
        env={**env, "FAKE_EXIT": "125"},
    )  # fmt: skip
    assert failed.returncode == 125
    path = Path(json.loads(Path(env["RECORD"]).read_text())["path"])
    assert not path.exists()
    Path(env["RECORD"]).unlink()
    # TERM to the session (what a cancelled start or a closed terminal sends): trap, exit, remove
    start = subprocess.Popen(
        ["bash", "-c", rank.start_line], stdin=subprocess.PIPE, text=True,
        env={**env, "FAKE_HANG": "1"}, start_new_session=True,
    )  # fmt: skip
    assert start.stdin is not None
    start.stdin.write(rank.env_file)
    start.stdin.close()
    deadline = time.monotonic() + 10
    while not Path(env["RECORD"]).exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    path = Path(json.loads(Path(env["RECORD"]).read_text())["path"])
    assert path.exists()
    os.killpg(start.pid, signal.SIGTERM)
    assert start.wait(10) == 143
    assert not path.exists()
    assert list(path.parent.iterdir()) == []
    # a leftover of a node that crashed mid-start is removed by the next start on the node
    leftover = path.parent / "cockpit-old-r0.env.AbCdEf"
    leftover.write_text("HF_TOKEN=x\n")
    hour_ago = time.time() - 3600
    os.utime(leftover, (hour_ago, hour_ago))
    subprocess.run(
        ["bash", "-c", rank.start_line], input=rank.env_file, text=True, env=env, check=True
    )
    assert list(path.parent.iterdir()) == []


def test_secrets_are_redacted_for_display() -> None:
    argv = ("docker", "run", "-e", "HF_TOKEN=hf_abc", "-e", "NCCL_ALGO=Ring", "img")
    assert redact_argv(argv) == (
        "docker",
        "run",
        "-e",
        "HF_TOKEN=<redacted>",
        "-e",
        "NCCL_ALGO=Ring",
        "img",
    )
    assert shlex.join(argv).count("hf_abc") == 1
