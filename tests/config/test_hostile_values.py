"""Hostile input files: identity fields validated like names, env values that an env file cannot
carry, NUL, a missing known_hosts, and control/bidi characters shown escaped, never raw."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from cockpit.config.inventory import PROJECT_RECIPES
from cockpit.printable import printable, shell_word
from tests.cli_runner import run_cockpit

RAW_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture
def inv(tmp_path: Path) -> Path:
    root = tmp_path / "inv"
    shutil.copytree(PROJECT_RECIPES, root)
    return root


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def _line_of(path: Path, fragment: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if fragment in line)


@pytest.mark.parametrize(
    "user",
    ["root; touch PWNED", "-oProxyCommand=touch PWNED", "", "Operator", "a\u202eb", "x" * 40],
)
def test_ssh_user_is_validated_with_file_line_and_field(inv: Path, user: str) -> None:
    clusters = inv / "clusters.toml"
    _edit(clusters, 'ssh_user = "operator"', f"ssh_user = {json.dumps(user)}")
    result = run_cockpit("--inventory", inv, "validate")
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert f"clusters.toml:{_line_of(clusters, 'ssh_user =')}: defaults.ssh_user:" in errors[0]
    assert not RAW_UNSAFE.search(result.stderr)
    assert run_cockpit("--inventory", inv, "lanes").returncode == 2


def test_a_nodes_user_is_validated_the_same_way(inv: Path) -> None:
    clusters = inv / "clusters.toml"
    _edit(clusters, 'host = "dgx3.example.lan"', 'host = "dgx3.example.lan"\nuser = "a b"')
    result = run_cockpit("--inventory", inv, "validate")
    assert result.returncode == 2
    line = _line_of(clusters, 'user = "a b"')
    assert f"clusters.toml:{line}: nodes.dgx3.user:" in result.stderr


def test_an_env_value_an_env_file_cannot_carry_is_refused_without_printing_it(inv: Path) -> None:
    recipe = inv / "qwen3-0.6b-2x.toml"
    _edit(recipe, "[env]\n", '[env]\nHF_TOKEN = "hf_first\\nLD_PRELOAD=/tmp/evil.so"\n')
    result = run_cockpit("--inventory", inv, "validate")
    assert result.returncode == 2
    assert f"qwen3-0.6b-2x.toml:{_line_of(recipe, 'HF_TOKEN')}: env.HF_TOKEN:" in result.stderr
    assert "--env-file" in result.stderr and "hf_first" not in result.stderr
    assert "evil" not in result.stderr


def test_an_api_key_flag_is_refused_with_where_the_key_goes_instead(inv: Path) -> None:
    """`--api-key` would stand on the engine's command line (the node's ps, docker inspect)."""
    recipe = inv / "qwen3-0.6b-2x.toml"
    secret = "sk-flagvalue0123456789abcdef"
    _edit(
        recipe,
        "enable_prefix_caching = true",
        f'enable_prefix_caching = true\nextra_args = {{ api-key = "{secret}" }}',
    )
    result = run_cockpit("--inventory", inv, "validate")
    assert result.returncode == 2
    [error] = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    where = f"qwen3-0.6b-2x.toml:{_line_of(recipe, 'api-key')}: serve.extra_args.api-key:"
    assert where in error and "VLLM_API_KEY in [env]" in error, error
    assert secret not in result.stdout + result.stderr
    launch = ("launch", "--recipe", "qwen3-0.6b-2x", "--cluster", "2nodes-dac", "--dry-run")
    assert run_cockpit("--inventory", inv, *launch).returncode == 2


def test_a_nul_is_refused_anywhere(inv: Path) -> None:
    recipe = inv / "qwen3-0.6b-2x.toml"
    _edit(recipe, 'served_model_name = "qwen3-0.6b"', 'served_model_name = "qwen\\u0000x"')
    result = run_cockpit("--inventory", inv, "render", "--recipe", "qwen3-0.6b-2x")
    assert result.returncode == 2
    assert "serve.served_model_name: holds a NUL character (\\x00)" in result.stderr
    assert "\x00" not in result.stderr


def test_a_missing_known_hosts_is_one_line_naming_file_setting_and_fix(inv: Path) -> None:
    clusters = inv / "clusters.toml"
    _edit(clusters, '# known_hosts = "known_hosts"', 'known_hosts = "fleet_known_hosts"')
    line = _line_of(clusters, "known_hosts = ")
    result = run_cockpit("--inventory", inv, "status", timeout=60)
    assert result.returncode == 2, result.stderr
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 1, result.stderr
    assert errors[0].startswith(f"error: {clusters}:{line}: ssh.known_hosts: known_hosts file ")
    assert f"{inv / 'fleet_known_hosts'} does not exist" in errors[0]
    assert "ssh-keyscan dgx1.example.lan dgx2.example.lan" in errors[0]
    assert f">> {inv / 'fleet_known_hosts'}" in errors[0]
    assert "no such file" not in errors[0].lower()
    launch = run_cockpit("--inventory", inv, "stop", "--lane", "qwen3-0.6b-2x")
    assert launch.returncode == 2 and "ssh.known_hosts" in launch.stderr
    validate = run_cockpit("--inventory", inv, "validate")
    assert validate.returncode == 2 and "ssh-keyscan" in validate.stderr


HOSTILE_CHARS = {
    "esc": "\x1b]0;owned\x07\x1b[2J",
    "rlo": "safe\u202eexe.txt",
    "bidi-isolate": "a\u2067b\u2069c",
    "c1": "x\x9by",
    "bom": "\ufeffbom",
}


def test_render_and_dry_run_show_control_and_bidi_characters_escaped(inv: Path) -> None:
    recipe = inv / "qwen3-0.6b-2x.toml"
    env = "".join(f"HOSTILE_{i} = {json.dumps(v)}\n" for i, v in enumerate(HOSTILE_CHARS.values()))
    _edit(recipe, "[env]\n", "[env]\n" + env)
    _edit(recipe, 'served_model_name = "qwen3-0.6b"', 'served_model_name = "q\\u001b[31mred"')
    _edit(
        recipe,
        "enable_prefix_caching = true",
        'enable_prefix_caching = true\nextra_args = { chat-template = "t\\u202eplt" }',
    )
    text = run_cockpit("--inventory", inv, "render", "--recipe", "qwen3-0.6b-2x")
    assert text.returncode == 0, text.stderr
    assert not RAW_UNSAFE.search(text.stdout) and "\ufeff" not in text.stdout
    assert "--served-model-name $'q\\x1b[31mred'" in text.stdout
    assert "--chat-template $'t\\u202eplt'" in text.stdout
    for value in HOSTILE_CHARS.values():
        assert printable(value) in text.stdout
    data = json.loads(run_cockpit("--inventory", inv, "render", "--recipe", "qwen3-0.6b-2x",
                                  "--format", "json").stdout)  # fmt: skip
    assert data["ranks"][0]["env"]["HOSTILE_1"] == HOSTILE_CHARS["rlo"]  # escaped by JSON itself
    dry = run_cockpit("--inventory", inv, "launch", "--recipe", "qwen3-0.6b-2x",
                      "--cluster", "dgx56-switch", "--dry-run")  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    assert "$'q\\x1b[31mred'" in dry.stdout and not RAW_UNSAFE.search(dry.stdout)


def test_the_display_quoting_means_the_same_word_in_bash(tmp_path: Path) -> None:
    import subprocess

    for value in [*HOSTILE_CHARS.values(), "it's", "back\\slash", "tab\there", "two\nlines"]:
        word = shell_word(value)
        assert not RAW_UNSAFE.search(word)
        echoed = subprocess.run(
            ["bash", "-c", f"printf %s {word}"], capture_output=True, check=True
        ).stdout
        assert echoed == value.encode(), (value, word)
