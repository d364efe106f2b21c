"""sparkrun's recipe YAML (v2, and v1: eugr's run-recipe format it migrates) as a cockpit recipe
table: every top-level key read, or reported with why it is not.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from cockpit.config.models import Cluster
from cockpit.config.recipe_import.recipe import fitting_clusters, image_table, model_table
from cockpit.config.recipe_import.source import (
    PLACEHOLDER,
    Imported,
    Refused,
    YamlRecipe,
    fill,
    split_command,
)
from cockpit.config.recipe_import.vllm_flags import (
    api_key_env,
    lane_nodes,
    parse_flags,
    serve_table,
)

# sparkrun 0.4.2's top-level recipe keys (sparkrun/core/recipe.py, _KNOWN_KEYS).
SPARKRUN_KEYS = frozenset(
    {
        "sparkrun_version", "recipe_version", "min_sparkrun_version", "name", "description",
        "model", "model_revision", "runtime", "runtime_version", "mode", "min_nodes", "max_nodes",
        "container", "containers", "defaults", "env", "command", "runtime_config",
        "cluster_only", "solo_only", "benchmark", "metadata", "pre_exec", "post_exec",
        "post_commands", "mods", "stop_after_post", "builder", "builder_config", "executor",
        "executor_config", "scheduler", "distribution_config", "layout", "cluster_config",
        "runtime_cache", "readiness", "capabilities", "unsupported_capabilities", "include",
        "overrides",
    }
)  # fmt: skip
READ_KEYS = frozenset(
    {
        "recipe_version", "description", "model", "model_revision", "runtime",
        "container", "min_nodes", "max_nodes", "cluster_only", "solo_only", "defaults", "env",
        "command", "metadata",
    }
)  # fmt: skip
WHY_NOT = {
    "name": "the lane is named by --name or the source's file name",
    "mods": "patches sparkrun applies inside the container at start; the cockpit runs the image "
    "as it is: build them into the image",
    "pre_exec": "shell hooks; the cockpit never runs a recipe's shell",
    "post_exec": "shell hooks; the cockpit never runs a recipe's shell",
    "post_commands": "shell hooks; the cockpit never runs a recipe's shell",
    "readiness": "the cockpit's readiness is fixed: /health, a one-token completion, every rank "
    "past its NCCL init",
    "benchmark": "benches are `cockpit bench` plans, not part of the recipe",
    "overrides": "conditional layers sparkrun picks per host or cluster; a cockpit recipe is one "
    "fixed contract: import what `sparkrun export recipe --realize` writes for those hosts",
    "containers": "per-host images; a cockpit lane runs one image on every rank",
    "builder": "sparkrun builds images; the cockpit runs an image by digest",
    "builder_config": "sparkrun builds images; the cockpit runs an image by digest",
    "distribution_config": "the cockpit syncs the image with `sync-image` and checks the "
    "snapshot's pins; it does not download",
}
RUNTIMES = ("", "vllm", "vllm-distributed", "vllm-ray", "eugr-vllm")


def from_yaml(
    recipe: YamlRecipe, name: str, clusters: dict[str, Cluster], source: Path
) -> Imported:
    """A sparkrun recipe (v2, or v1: eugr's run-recipe YAML) as a cockpit recipe table; a
    refusal names the line of the key it is about."""
    try:
        return _from_yaml(recipe.data, name, clusters, source)
    except Refused as exc:
        raise exc.at(recipe.lines) from None


def _from_yaml(
    data: dict[str, Any], name: str, clusters: dict[str, Cluster], source: Path
) -> Imported:
    result = Imported({})
    version = str(data.get("recipe_version", "2"))
    if version not in ("1", "2"):
        raise Refused(source, "recipe_version", f"version {version!r}: only 1 and 2 are read")
    if "include" in data:
        raise Refused(
            source,
            "include",
            f"the recipe includes {data['include']!r}, which only sparkrun's registries resolve: "
            "import the flattened recipe `sparkrun export recipe` writes",
        )
    runtime = str(data.get("runtime", ""))
    if runtime not in RUNTIMES:
        raise Refused(source, "runtime", f"runtime {runtime!r}: the cockpit runs vLLM lanes only")
    if runtime == "vllm-ray":
        result.skip("runtime vllm-ray", "the cockpit starts vLLM's own multi-node backend")
    for key in data:
        if key in READ_KEYS or key == "runtime":
            continue
        why = WHY_NOT.get(key) or (
            "a sparkrun key the cockpit has no field for"
            if key in SPARKRUN_KEYS
            else "not a sparkrun recipe key"
        )
        result.skip(str(key), why)
    defaults, env, metadata = (_mapping(data, k, source) for k in ("defaults", "env", "metadata"))
    values = {
        **defaults,
        "model": data.get("model", ""),
        "resolved_model_path": data.get("model", ""),
    }
    if data.get("model_revision"):
        values["model_revision"] = data["model_revision"]
    command = data.get("command")
    if command is None:
        words = ["vllm", "serve", str(data.get("model", ""))] + [
            word for key, value in defaults.items() for word in _default_flag(key, value)
        ]
    else:
        filled = fill(str(command), values)
        missing = [p for p in PLACEHOLDER.findall(filled) if re.fullmatch(r"[A-Za-z_]\w*", p)]
        if missing:
            raise Refused(
                source, "command", f"placeholder {{{missing[0]}}} has no value in defaults"
            )
        words = split_command(filled, source, "command")
        used = set(PLACEHOLDER.findall(str(command)))
        for key in defaults:
            if key not in used:
                result.skip(f"defaults.{key}", "the command does not use it")
    try:
        named, flags = parse_flags(words, result)
    except ValueError as exc:
        raise Refused(source, "command", str(exc)) from exc
    if named and named != data.get("model"):
        result.skip(f"model {named!r} of the command", f"the recipe serves {data.get('model')!r}")
    revision = data.get("model_revision") or flags.get("revision")
    if flags.get("revision") not in (None, revision):
        result.skip(f"--revision {flags['revision']}", f"model_revision {revision!r} is the pin")
    nodes = lane_nodes(flags, source)
    solo, cluster_only = bool(data.get("solo_only")), bool(data.get("cluster_only"))
    low = max(_count(data, "min_nodes", source) or 1, 2 if cluster_only else 1)
    high = 1 if solo else _count(data, "max_nodes", source)
    key_env = api_key_env(flags, result)
    serve = serve_table(flags, result)
    serve.setdefault("served_model_name", str(data.get("model", "")))
    model = model_table(
        data.get("model", ""),
        revision,
        metadata,
        str(serve.get("kv_cache_dtype", "auto")),
    )
    read = {"description", "num_kv_heads", "quantization"}
    if "kv_bytes_per_token" in model:
        read |= {"num_layers", "head_dim"}
    for key in metadata:
        if key not in read:
            result.skip(f"metadata.{key}", "the cockpit reads the model's shape from its recipe")
    result.table = {
        "lane": {
            "name": name,
            "description": str(data.get("description") or metadata.get("description") or ""),
            "nodes": nodes,
            "clusters": fitting_clusters(nodes, clusters, low, high, source),
        },
        "image": image_table(data.get("container")),
        "launcher": {"entrypoint": ["vllm", "serve"]},
        "model": model,
        "serve": serve,
        "env": {str(k): _env_value(str(k), v, values, result) for k, v in env.items()},
    }
    result.table["env"] = {k: v for k, v in result.table["env"].items() if v is not None} | key_env
    return result


def _mapping(data: dict[str, Any], key: str, source: Path) -> dict[str, Any]:
    value = data.get(key) or {}
    if not isinstance(value, dict):
        raise Refused(source, key, f"must be a mapping, got {type(value).__name__}")
    return value


def _count(data: dict[str, Any], key: str, source: Path) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise Refused(source, key, f"must be a node count, got {value!r}")
    return value


def _default_flag(key: str, value: Any) -> list[str]:
    """A default as the flag sparkrun's vLLM runtime emits for it (command-less recipes)."""
    flag = {
        "tensor_parallel": "-tp",
        "pipeline_parallel": "-pp",
        "data_parallel": "--data-parallel-size",
    }.get(key, "--" + key.replace("_", "-"))
    if value is True:
        return [flag]
    if value is False:
        return [f"--no-{key.replace('_', '-')}"]
    return [flag, json.dumps(value) if isinstance(value, dict | list) else str(value)]


def _env_value(key: str, value: Any, values: dict[str, Any], result: Imported) -> str | None:
    """An env value as sparkrun sets it (its placeholders filled); one it fills at launch
    from the host is reported, not guessed."""
    text = fill(str(value), values)
    if PLACEHOLDER.search(text):
        result.skip(f"env.{key}", f"{text!r}: sparkrun fills it at launch")
        return None
    return text
