"""`cockpit recipe import`: real sparkrun recipes and an eugr launch become recipes the loader
accepts and the planner places; shell syntax never reaches a node; nothing is dropped quietly."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from cockpit.config import load_inventory
from cockpit.config.inventory import PROJECT_RECIPES
from cockpit.config.recipe_import.eugr import from_script
from cockpit.config.recipe_import.recipe import apply_sets, to_toml
from cockpit.config.recipe_import.source import read_yaml, shell_syntax
from cockpit.config.recipe_import.sparkrun import from_yaml
from cockpit.errors import InputError
from cockpit.plan import plan_lane
from cockpit.plan.render import ENV_FILE
from tests.cli_runner import run_cockpit

FIXTURES = Path(__file__).parents[1] / "fixtures" / "recipe_import"
DIGEST = "image.ref=ghcr.io/spark-arena/dgx-vllm-eugr-nightly@sha256:0123456789abcdef"
# What none of the sources says and the cockpit needs (test values, not the models' own).
MODEL_FACTS = [
    "model.revision=0123456789abcdef",
    "model.num_attention_heads=48",
    "model.num_kv_heads=8",
    "model.max_model_len=262144",
]
CASES = {  # fixture → (inventory, further --set values, a flag its head must carry)
    "minimax-m2.7-nvfp4-vllm.yaml": (
        PROJECT_RECIPES,
        ["serve.max_num_seqs=16", "serve.max_num_batched_tokens=8192"],
        "--reasoning-parser",
    ),
    "qwen3.5-397b-a17b-int4-autoround-4x-vllm.yaml": (
        PROJECT_RECIPES,
        ["serve.max_num_seqs=16"],
        "--enable-auto-tool-choice",
    ),
    "qwen3.6-27b-fp8-mtp-vllm.yaml": (
        PROJECT_RECIPES / "real-vllm-cpu",
        ["serve.max_num_seqs=16"],
        "--speculative-config",
    ),
    "eugr-gpt-oss-120b-tp2.sh": (PROJECT_RECIPES, [], "--tool-call-parser"),
}


def _copy(root: Path, tmp_path: Path) -> Path:
    target = tmp_path / "inv"
    shutil.copytree(root, target, ignore=shutil.ignore_patterns("real-vllm-cpu"))
    return target


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("fixture", sorted(CASES))
def test_each_fixture_imports_loads_and_plans(fixture: str, tmp_path: Path) -> None:
    root, sets, flag = CASES[fixture]
    inv = _copy(root, tmp_path)
    clusters = load_inventory(inv).clusters
    source = FIXTURES / fixture
    name = source.stem
    if source.suffix == ".yaml":
        imported = from_yaml(read_yaml(source.read_text(), source), name, clusters, source)
    else:
        imported = from_script(source.read_text(), name, clusters, source)
    apply_sets(imported.table, [DIGEST, *MODEL_FACTS, *sets])
    (inv / f"{name}.toml").write_text(to_toml(imported, source, "test"))
    inventory = load_inventory(inv)
    recipe = inventory.recipe(name)
    for cluster in recipe.lane.clusters:
        plan = plan_lane(inventory, recipe, inventory.cluster(cluster))
        head = plan.ranks[0].argv
        assert flag in head
        assert "--host" in head and "0.0.0.0" not in head  # the cluster's, not the source's
        assert all("--headless" in rank.argv for rank in plan.ranks[1:])


def test_the_cli_writes_a_recipe_that_validates_and_lists_what_it_left_out(
    tmp_path: Path,
) -> None:
    inv = _copy(PROJECT_RECIPES, tmp_path)
    sets = [a for s in [DIGEST, *MODEL_FACTS, "serve.max_num_seqs=16"] for a in ("--set", s)]
    source = FIXTURES / "qwen3.5-397b-a17b-int4-autoround-4x-vllm.yaml"
    result = run_cockpit("--inventory", inv, "recipe", "import", source, "--name", "q35", *sets)
    assert result.returncode == 0, result.stderr
    assert "not imported: mods (patches sparkrun applies" in result.stderr
    assert "not imported: --port (the cockpit sets it" in result.stderr
    written = (inv / "q35.toml").read_text()
    assert "# not imported: mods" in written
    assert 'publication = "ghcr.io/spark-arena/dgx-vllm-eugr-nightly-tf5:latest"' in written
    assert run_cockpit("--inventory", inv, "validate").returncode == 0
    again = run_cockpit("--inventory", inv, "recipe", "import", source, "--name", "q35", *sets)
    assert again.returncode == 2 and "exists" in again.stderr


def test_a_tag_is_refused_by_the_loader_with_what_the_digest_pin_needs(tmp_path: Path) -> None:
    inv = _copy(PROJECT_RECIPES, tmp_path)
    sets = [a for s in [*MODEL_FACTS, "serve.max_num_seqs=16"] for a in ("--set", s)]
    source = FIXTURES / "qwen3.5-397b-a17b-int4-autoround-4x-vllm.yaml"
    result = run_cockpit("--inventory", inv, "recipe", "import", source, *sets)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert "image.ref: image must be referenced by digest" in errors[0]
    assert "docker image inspect --format '{{index .RepoDigests 0}}'" in result.stderr
    assert sorted(p.name for p in inv.iterdir()) == sorted(
        p.name for p in PROJECT_RECIPES.glob("*.toml")
    )


def test_dry_run_prints_the_draft_and_writes_nothing(tmp_path: Path) -> None:
    inv = _copy(PROJECT_RECIPES, tmp_path)
    before = sorted(inv.iterdir())
    source = FIXTURES / "minimax-m2.7-nvfp4-vllm.yaml"
    result = run_cockpit("--inventory", inv, "recipe", "import", source, "--dry-run")
    assert result.returncode == 2  # the draft lacks the model's facts: said, field by field
    assert result.stdout.startswith("# Imported by `cockpit recipe import`")
    assert 'repo = "nvidia/MiniMax-M2.7-NVFP4"' in result.stdout
    assert "model.num_attention_heads: required key is missing" in result.stderr
    assert "hint: fill it with --model-config CONFIG.json" in result.stderr
    assert "hint: fill it with --set model.revision=VALUE" in result.stderr
    assert sorted(inv.iterdir()) == before


HOSTILE_COMMANDS = [
    "vllm serve {model} --port 8000; touch /tmp/PWNED",
    "vllm serve {model} --chat-template $(touch /tmp/PWNED)",
    "vllm serve {model} --chat-template `touch /tmp/PWNED`",
    'vllm serve {model} --chat-template "$HOME/x"',
    "vllm serve {model} --max-num-seqs 8 && reboot",
    "vllm serve {model} --max-num-seqs 8 > /etc/passwd",
    "vllm serve {model} --max-num-seqs 8\n  rm -rf /",
    "vllm serve {model} --chat-template /etc/*",
]


@pytest.mark.parametrize("command", HOSTILE_COMMANDS)
def test_shell_syntax_in_a_command_is_refused_in_one_line(command: str, tmp_path: Path) -> None:
    inv = _copy(PROJECT_RECIPES, tmp_path)
    text = f"model: a/b\ndefaults: {{}}\ncommand: {json.dumps(command)}\n"  # JSON is YAML
    source = _write(tmp_path, "bad.yaml", text)
    assert read_yaml(text, source).data["command"] == command
    with pytest.raises(InputError, match="shell syntax in the command"):
        from_yaml(
            read_yaml(source.read_text(), source), "bad", load_inventory(inv).clusters, source
        )


def test_a_default_that_brings_shell_syntax_into_the_command_is_refused(tmp_path: Path) -> None:
    source = _write(
        tmp_path,
        "bad.yaml",
        "model: a/b\ndefaults: {p: '1; reboot'}\ncommand: vllm serve {model} --port {p}\n",
    )
    clusters = load_inventory(PROJECT_RECIPES).clusters
    with pytest.raises(InputError, match="shell syntax"):
        from_yaml(read_yaml(source.read_text(), source), "bad", clusters, source)


def test_quoted_shell_text_stays_one_word_and_reaches_bash_quoted(tmp_path: Path) -> None:
    """Single-quoted text is a word in the source's shell too: it is kept, and the cockpit's
    renderer quotes it; bash gets back exactly the argv."""
    inv = _copy(PROJECT_RECIPES, tmp_path)
    hostile = "$(touch PWNED); `id` | x > y"
    source = _write(
        tmp_path,
        "q.yaml",
        "model: Qwen/Qwen3-0.6B\nmin_nodes: 2\ncontainer: vllm/vllm-openai@sha256:3f2a9c41d7e85b06\n"
        "defaults: {tensor_parallel: 2}\n"
        f'env: {{PROMPT_PREFIX: "{hostile}"}}\n'
        "command: |\n"
        f"  vllm serve {{model}} -tp {{tensor_parallel}} --chat-template '{hostile}'\n",
    )
    imported = from_yaml(
        read_yaml(source.read_text(), source), "q", load_inventory(inv).clusters, source
    )
    apply_sets(
        imported.table,
        [
            *MODEL_FACTS,
            "serve.max_num_seqs=8",
            "serve.max_num_batched_tokens=8",
            "serve.max_model_len=4096",
            "serve.gpu_memory_utilization=0.5",
        ],
    )
    (inv / "q.toml").write_text(to_toml(imported, source, "test"))
    inventory = load_inventory(inv)
    plan = plan_lane(inventory, inventory.recipe("q"), inventory.cluster("dgx56-switch"))
    rank = plan.ranks[0]
    assert hostile in rank.argv
    assert f"PROMPT_PREFIX={hostile}\n" in rank.env_file  # the env file, never the command line
    assert not any("PROMPT_PREFIX" in word for word in rank.argv)
    line = rank.shell.replace(f'"{ENV_FILE}"', "ENVFILE")
    echoed = subprocess.run(
        ["bash", "-c", f"printf '%s\\0' {line}"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    ).stdout.split("\0")[:-1]
    assert echoed == [w if w != ENV_FILE else "ENVFILE" for w in rank.argv]
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize(
    ("env", "field"),
    [
        ('{"BAD;KEY": "1"}', "env.BAD;KEY.[key]"),
        ('{"A": "x\\ny"}', "env.A"),
        ('{"A": "x\\u0000y"}', "env.A"),
    ],
)
def test_env_a_file_cannot_carry_is_refused_by_the_loader(
    env: str, field: str, tmp_path: Path
) -> None:
    inv = _copy(PROJECT_RECIPES, tmp_path)
    source = _write(
        tmp_path,
        "e.yaml",
        f"model: a/b\ncontainer: r@sha256:0123456789abcdef\nmin_nodes: 2\nenv: {env}\n"
        "command: vllm serve {model} -tp 2 --max-model-len 8 --max-num-seqs 1 "
        "--max-num-batched-tokens 8 --gpu-memory-utilization 0.5\n",
    )
    sets = [a for s in MODEL_FACTS for a in ("--set", s)]
    result = run_cockpit("--inventory", inv, "recipe", "import", source, *sets)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert "e.toml:" in errors[0] and f" {field}: " in errors[0], result.stderr
    assert not (inv / "e.toml").exists()


def test_unknown_and_unsupported_keys_are_reported(tmp_path: Path) -> None:
    source = _write(
        tmp_path,
        "u.yaml",
        "model: a/b\nfrobnicate: 1\nreadiness: {timeout: 5}\nmin_nodes: 2\n"
        "defaults: {tensor_parallel: 2, unused: 3}\ncommand: vllm serve {model} -tp {tensor_parallel}\n",
    )
    clusters = load_inventory(PROJECT_RECIPES).clusters
    imported = from_yaml(read_yaml(source.read_text(), source), "u", clusters, source)
    lines = imported.lines()
    assert "not imported: frobnicate (not a sparkrun recipe key)" in lines
    assert any(
        line.startswith("not imported: readiness (the cockpit's readiness") for line in lines
    )
    assert "not imported: defaults.unused (the command does not use it)" in lines


def test_shell_syntax_finder_reads_quotes_as_a_shell_does() -> None:
    assert shell_syntax("vllm serve m --x '$(a); b'") is None
    assert shell_syntax('vllm serve m --x "a;b"') is None
    assert shell_syntax('vllm serve m --x "$(a)"') is not None
    assert shell_syntax("vllm serve m --x a\\;b") is None


def test_broken_yaml_is_one_line_with_file_and_line(tmp_path: Path) -> None:
    source = _write(tmp_path, "broken.yaml", "model: a/b\ndefaults:\n  port: 8000\n    host: x\n")
    result = run_cockpit("--inventory", PROJECT_RECIPES, "recipe", "import", source)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"error: {source}:4: invalid YAML: ")


def test_cli_refusals_and_guidance(tmp_path: Path) -> None:
    typo = run_cockpit("recipe", "imprt", "x.yaml")
    assert typo.returncode == 2
    assert "did you mean 'recipe import'?" in typo.stderr
    missing = run_cockpit("--inventory", PROJECT_RECIPES, "recipe", "import", tmp_path / "no.yaml")
    assert missing.returncode == 2
    assert "cannot read" in missing.stderr
    source = _write(tmp_path, "sg.yaml", "model: a/b\nruntime: sglang\ncommand: sglang serve x\n")
    refused = run_cockpit("--inventory", PROJECT_RECIPES, "recipe", "import", source)
    assert refused.returncode == 2
    assert (
        f"{source}:2: runtime: runtime 'sglang': the cockpit runs vLLM lanes only" in refused.stderr
    )
    escape = run_cockpit(
        "--inventory", PROJECT_RECIPES, "recipe", "import", FIXTURES / "minimax-m2.7-nvfp4-vllm.yaml",
        "--name", "../escaped", "--out", tmp_path / "out",
    )  # fmt: skip
    assert escape.returncode == 2 and "lane.name" in escape.stderr
    assert not (tmp_path / "escaped.toml").exists() and not (tmp_path / "out").exists()
    pp = _write(tmp_path, "pp.yaml", "model: a/b\ncommand: vllm serve {model} -tp 1 -pp 2\n")
    result = run_cockpit("--inventory", PROJECT_RECIPES, "recipe", "import", pp)
    assert result.returncode == 2 and "pipeline parallelism is not supported" in result.stderr


def test_an_eugr_v1_recipe_with_brace_escapes_and_ray(tmp_path: Path) -> None:
    """eugr's run-recipe YAML (v1): `{{`/`}}` escape JSON braces for str.format; Ray is left."""
    source = _write(
        tmp_path,
        "m.yaml",
        'recipe_version: "1"\nname: MiniMax\nmodel: a/b\ncluster_only: true\n'
        "defaults: {tensor_parallel: 2, port: 8000}\ncommand: |\n"
        "  vllm serve a/b -tp {tensor_parallel} --port {port} --distributed-executor-backend ray --revision abcdef01 \\\n"
        '    --compilation-config \'{{"cudagraph_mode":"none","x":{{"y":false}}}}\'\n',
    )
    clusters = load_inventory(PROJECT_RECIPES).clusters
    imported = from_yaml(read_yaml(source.read_text(), source), "m", clusters, source)
    assert imported.table["serve"]["compilation_config"] == {
        "cudagraph_mode": "none",
        "x": {"y": False},
    }
    assert imported.table["lane"]["nodes"] == 2
    assert imported.table["model"]["revision"] == "abcdef01"
    lines = imported.lines()
    assert any(
        line.startswith("not imported: --distributed-executor-backend ray") for line in lines
    )
    assert any(line.startswith("not imported: name (") for line in lines)


def test_a_command_less_recipe_takes_its_flags_from_defaults(tmp_path: Path) -> None:
    source = _write(
        tmp_path,
        "d.yaml",
        "model: a/b\nmin_nodes: 2\ndefaults: {tensor_parallel: 2, max_num_seqs: 4, "
        "enable_prefix_caching: false, tool_call_parser: x, host: 0.0.0.0}\n",
    )
    clusters = load_inventory(PROJECT_RECIPES).clusters
    imported = from_yaml(read_yaml(source.read_text(), source), "d", clusters, source)
    serve = imported.table["serve"]
    assert serve["max_num_seqs"] == 4 and serve["enable_prefix_caching"] is False
    assert serve["extra_args"] == {"tool-call-parser": "x"}
    assert (
        "not imported: --host (the cockpit sets it from the cluster and the rank)"
        in imported.lines()
    )


def test_the_models_config_fills_its_shape(tmp_path: Path) -> None:
    """config.json here is trimmed to the fields the import reads (test values)."""
    inv = _copy(PROJECT_RECIPES, tmp_path)
    source = FIXTURES / "minimax-m2.7-nvfp4-vllm.yaml"
    sets = [DIGEST, "model.revision=0123abcd", "serve.max_num_seqs=8"]
    sets += ["serve.max_num_batched_tokens=8192"]
    result = run_cockpit(
        "--inventory", inv, "recipe", "import", source, "--name", "mm",
        "--model-config", FIXTURES / "minimax-config.json", *[a for s in sets for a in ("--set", s)],
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    model = load_inventory(inv).recipe("mm").model
    assert (model.num_attention_heads, model.num_kv_heads, model.max_model_len) == (48, 8, 196608)
    assert model.architecture == "MiniMaxM2ForCausalLM"
    assert model.kv_bytes_per_token == 2 * 62 * 8 * 128 * 2  # layers, KV heads, head dim, bf16
    broken = _write(tmp_path, "c.json", '{"num_attention_heads": 4,\n oops}')
    bad = run_cockpit("--inventory", inv, "recipe", "import", source, "--model-config", broken)
    assert bad.returncode == 2 and f"error: {broken}:2: invalid JSON" in bad.stderr


def test_an_eugr_docker_run_line_gives_its_image_and_env(tmp_path: Path) -> None:
    source = _write(
        tmp_path,
        "run.sh",
        "HF_HUB_OFFLINE=1\n"
        "docker run -d --gpus all -e NCCL_DEBUG=INFO vllm-node@sha256:0123456789abcdef \\\n"
        "  vllm serve a/b -tp 2 --max-num-seqs 4\n"
        "sleep 5\n",
    )
    imported = from_script(
        source.read_text(), "run", load_inventory(PROJECT_RECIPES).clusters, source
    )
    assert imported.table["image"]["ref"] == "vllm-node@sha256:0123456789abcdef"
    assert imported.table["env"] == {"HF_HUB_OFFLINE": "1", "NCCL_DEBUG": "INFO"}
    assert imported.table["lane"]["nodes"] == 2
    lines = imported.lines()
    assert "not imported: line 2 before vllm (the cockpit writes its own `docker run`)" in lines
    assert any(line.startswith("not imported: line 4 ('sleep 5'") for line in lines)
    hostile = _write(tmp_path, "h.sh", "vllm serve a/b --port $PORT\n")
    with pytest.raises(InputError) as refused:
        from_script(hostile.read_text(), "h", load_inventory(PROJECT_RECIPES).clusters, hostile)
    assert str(refused.value).startswith(f"{hostile}:1: shell syntax in the command")


def test_dry_run_shows_no_secret_and_the_file_keeps_it(tmp_path: Path) -> None:
    inv = _copy(PROJECT_RECIPES, tmp_path)
    secret = "s3cr3t-value-123456"
    source = _write(
        tmp_path,
        "s.yaml",
        f"model: a/b\ncontainer: r@sha256:0123456789abcdef\nmin_nodes: 2\nenv: {{HF_TOKEN: {secret}}}\n"
        f"command: vllm serve {{model}} -tp 2 --api-key {secret} --api-key {secret}x --max-model-len 8 "
        "--max-num-seqs 1 --max-num-batched-tokens 8 --gpu-memory-utilization 0.5\n",
    )
    sets = [a for s in MODEL_FACTS for a in ("--set", s)]
    shown_run = run_cockpit("--inventory", inv, "recipe", "import", source, "--dry-run", *sets)
    assert shown_run.returncode == 0, shown_run.stderr
    assert secret not in shown_run.stdout + shown_run.stderr
    assert 'HF_TOKEN = "<redacted>"' in shown_run.stdout
    assert 'VLLM_API_KEY = "<redacted>"' in shown_run.stdout  # the flag's last value, as vLLM
    written = run_cockpit("--inventory", inv, "recipe", "import", source, *sets)
    assert written.returncode == 0 and secret not in written.stderr
    text = (inv / "s.toml").read_text()
    assert f'HF_TOKEN = "{secret}"' in text and f'VLLM_API_KEY = "{secret}x"' in text
    assert "api-key =" not in text  # never a flag on the engine's command line


def test_cockpit_import_sparkrun_and_eugr_are_the_same_import(tmp_path: Path) -> None:
    """`cockpit import sparkrun FILE` / `cockpit import eugr FILE`, as the issue names them."""
    inv = _copy(PROJECT_RECIPES, tmp_path)
    sets = [a for s in [DIGEST, *MODEL_FACTS, "serve.max_num_seqs=16"] for a in ("--set", s)]
    source = FIXTURES / "qwen3.5-397b-a17b-int4-autoround-4x-vllm.yaml"
    via_recipe = run_cockpit("--inventory", inv, "recipe", "import", source, "--dry-run", *sets)
    via_import = run_cockpit("--inventory", inv, "import", "sparkrun", source, "--dry-run", *sets)
    assert via_import.returncode == via_recipe.returncode == 0, via_import.stderr
    assert via_import.stdout == via_recipe.stdout and via_import.stderr == via_recipe.stderr
    script = FIXTURES / "eugr-gpt-oss-120b-tp2.sh"
    eugr = run_cockpit("--inventory", inv, "import", "eugr", script, "--dry-run")
    assert (
        eugr.stdout
        == run_cockpit(
            "--inventory", inv, "recipe", "import", script, "--format", "eugr", "--dry-run"
        ).stdout
    )
    assert eugr.stdout  # the draft, whatever the loader then says of it
