"""Issue 31, API keys: where a lane's key comes from, how requests carry it, which keys the
simulated engine requires (vLLM's choice), and llama-benchy's command line, which never holds it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.api_key import auth_headers, endpoint_api_key, lane_api_key
from cockpit.bench.benchy_process import KEY_ENV, benchy_argv, key_launcher
from cockpit.bench.driver import DriverConfig
from cockpit.bench.models import PointSpec
from cockpit.cli.sim_cmds import demo_lane
from cockpit.config.inventory import PROJECT_RECIPES
from cockpit.errors import InputError
from cockpit.redact import redact
from cockpit_sim.engine.args import parse
from cockpit_sim.engine.server import api_keys

KEY = "lane-key-0123456789"


def test_a_lane_s_key_is_its_env_s_vllm_api_key_and_travels_as_a_bearer_token() -> None:
    assert lane_api_key({"VLLM_API_KEY": KEY, "HF_TOKEN": "x"}) == KEY
    assert lane_api_key({"VLLM_API_KEY": ""}) is None  # vLLM sets no key from an empty one
    assert lane_api_key({}) is None
    assert auth_headers(KEY) == {"Authorization": f"Bearer {KEY}"}
    assert auth_headers(None) == {}


def test_an_endpoint_s_key_is_the_operator_s_variable_remembered_by_the_redactor() -> None:
    own = "operator-key-9876543210"
    assert endpoint_api_key({"VLLM_API_KEY": own}) == own
    assert redact(f"error at {own}") == "error at <redacted>"
    assert endpoint_api_key({}) is None
    with pytest.raises(InputError, match=r"\$VLLM_API_KEY: holds a line break"):
        endpoint_api_key({"VLLM_API_KEY": "a\r\nX-Injected: 1"})


def test_the_simulated_engine_picks_its_keys_as_vllm_does() -> None:
    served = ["serve", "/m", "--port", "8000"]
    assert api_keys(parse(served), {"VLLM_API_KEY": KEY}) == (KEY,)
    assert api_keys(parse([*served, "--api-key", "a", "b"]), {"VLLM_API_KEY": KEY}) == ("a", "b")
    assert api_keys(parse(served), {"VLLM_API_KEY": ""}) == ()
    assert api_keys(parse(served), {}) == ()


def _config(exe: tuple[str, ...], api_key: str | None) -> DriverConfig:
    return DriverConfig(
        "http://127.0.0.1:1", "m", (PointSpec(0, 1, 64, 8),), Path("/t"), exe=exe, api_key=api_key
    )


def test_llama_benchy_s_command_line_never_holds_the_key(tmp_path: Path) -> None:
    points = [PointSpec(0, 1, 64, 8)]
    module = (sys.executable, "-m", "llama_benchy")
    plain = benchy_argv(_config(module, None), points, "http://b", tmp_path / "r.json")
    assert plain[:3] == list(module) and "--api-key" not in plain
    keyed = benchy_argv(_config(module, KEY), points, "http://b", tmp_path / "r.json")
    assert KEY not in " ".join(keyed) and keyed[0] == sys.executable and keyed[1] == "-c"
    assert keyed[3:5] == ["module", "llama_benchy"] and keyed[5:] == plain[3:]
    script = tmp_path / "llama-benchy"
    script.write_text(f"#!{sys.executable}\nprint('x')\n")
    assert key_launcher((str(script),))[0] == sys.executable
    shell = tmp_path / "wrapper"
    shell.write_text('#!/bin/sh\nexec llama-benchy "$@"\n')
    with pytest.raises(InputError, match="not a Python script"):
        key_launcher((str(shell),))


def test_the_launcher_hands_the_key_to_the_program_s_own_argv(tmp_path: Path) -> None:
    """What the started program sees: its arguments, then `--api-key KEY`, and the variable gone
    from its environment (its own children do not inherit it)."""
    script = tmp_path / "show.py"
    shown = f"import os, sys\nprint(sys.argv[1:])\nprint(os.environ.get({KEY_ENV!r}))\n"
    script.write_text(f"#!{sys.executable}\n{shown}")
    argv = [*key_launcher((str(script),)), "--pp", "64"]
    done = subprocess.run(
        argv, capture_output=True, text=True, env={KEY_ENV: KEY}, check=True, timeout=30
    )
    assert done.stdout.splitlines() == [str(["--pp", "64", "--api-key", KEY]), "None"]
    assert KEY not in " ".join(argv)


def test_the_demo_s_load_gets_its_lane_s_key(tmp_path: Path) -> None:
    inv = tmp_path / "inv"
    shutil.copytree(PROJECT_RECIPES, inv)
    recipe = inv / "qwen3-0.6b-2x.toml"
    recipe.write_text(recipe.read_text().replace("[env]\n", f'[env]\nVLLM_API_KEY = "{KEY}"\n', 1))
    demo = demo_lane(inv, "qwen3-0.6b-2x@2nodes-dac")
    assert (demo.lane.lane, demo.api_key) == ("qwen3-0.6b-2x", KEY) and KEY not in repr(demo)
