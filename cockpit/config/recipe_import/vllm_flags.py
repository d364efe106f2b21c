"""vLLM's `serve` command line as the recipe's [serve] table and the lane's node count: typed
fields where the cockpit has one, the rest as extra_args, and the flags it sets itself reported.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from cockpit.api_key import API_KEY_ENV
from cockpit.config.models import ServeContract
from cockpit.config.recipe_import.source import Imported, Refused
from cockpit.config.rules import API_KEY_FLAG, RENDERED_FLAGS

SHORT_FLAGS = {"-tp": "tensor-parallel-size", "-pp": "pipeline-parallel-size"}
JSON_FIELDS = (
    "speculative_config",
    "model_loader_extra_config",
    "compilation_config",
    "kernel_config",
    "hf_overrides",
)
BOOL_FIELDS = ("enable_prefix_caching", "trust_remote_code", "enable_flashinfer_autotune")
NUMBER_FIELDS = ("max_model_len", "max_num_seqs", "max_num_batched_tokens")


def parse_flags(words: list[str], result: Imported) -> tuple[str | None, dict[str, Any]]:
    """`vllm serve MODEL --flag value …` → (model, flags by long name; True for a bare flag)."""
    if words[:2] != ["vllm", "serve"]:
        raise ValueError("the command is not `vllm serve …`")
    rest = words[2:]
    model = rest.pop(0) if rest and not rest[0].startswith("-") else None
    flags: dict[str, Any] = {}
    index = 0
    while index < len(rest):
        word = rest[index]
        index += 1
        if not word.startswith("-"):
            result.skip(f"argument {word!r}", "a word after the flags that no flag takes")
            continue
        name, equals, value = word.partition("=")
        name = SHORT_FLAGS.get(name, name)
        if not name.startswith("--") and name not in SHORT_FLAGS.values():
            result.skip(name, "a short option the cockpit does not know: write its long form")
            continue
        name = name.removeprefix("--")
        if not equals:
            following = rest[index] if index < len(rest) else None
            if following is not None and not _is_flag(following):
                value, index = following, index + 1
            else:
                value = True
        if name in flags:
            result.skip(f"--{name} {flags[name]}", "given twice: vLLM takes the last value")
        flags[name] = value
    return model, flags


def _is_flag(word: str) -> bool:
    return word.startswith("-") and not re.fullmatch(r"-\d+(\.\d+)?", word)


def _number(value: Any) -> Any:
    """An int or float where the text is one; else the text (the loader names the field)."""
    for kind in (int, float):
        try:
            return kind(value)
        except (TypeError, ValueError):
            pass
    return value


def api_key_env(flags: dict[str, Any], result: Imported) -> dict[str, str]:
    """`--api-key KEY` taken out of `flags` as the env's VLLM_API_KEY, which vLLM reads too: a
    flag would stand on the engine's command line on the node (the loader refuses it)."""
    value = flags.pop(API_KEY_FLAG, None)
    if value is None:
        return {}
    if value is True:
        result.skip(f"--{API_KEY_FLAG}", "given without a key")
        return {}
    result.skip(
        f"--{API_KEY_FLAG}",
        f"moved to [env] {API_KEY_ENV}: a flag would stand on the node's command line",
    )
    return {API_KEY_ENV: str(value)}


def serve_table(flags: dict[str, Any], result: Imported) -> dict[str, Any]:
    """vLLM flags → the recipe's [serve]: typed fields where the cockpit has one, the rest as
    extra_args; the flags the cockpit sets per cluster and rank are reported, not kept."""
    typed = set(ServeContract.model_fields) - {"extra_args"}
    serve: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for name, value in flags.items():
        negated = name.removeprefix("no-")
        key = name.replace("-", "_")
        if name == "tensor-parallel-size":
            continue  # carried over as lane.nodes (lane_nodes): the cockpit renders TP = nodes
        if name == "pipeline-parallel-size":
            result.skip(f"--{name} {value}", "vLLM's default; the cockpit runs no pipeline stages")
        elif name in RENDERED_FLAGS:
            result.skip(f"--{name}", "the cockpit sets it from the cluster and the rank")
        elif name == "distributed-executor-backend":
            result.skip(
                f"--{name} {value}",
                "the cockpit starts vLLM's own multi-node backend (--nnodes/--node-rank), not Ray",
            )
        elif name == "revision":
            continue  # carried over as model.revision: the pinned snapshot is mounted
        elif value is True and negated != name and negated.replace("-", "_") in BOOL_FIELDS:
            serve[negated.replace("-", "_")] = False
        elif key in BOOL_FIELDS:
            serve[key] = value is True or str(value).lower() == "true"
        elif key in JSON_FIELDS:
            try:
                serve[key] = json.loads(value) if isinstance(value, str) else value
            except json.JSONDecodeError:
                serve[key] = value  # the loader says it is not a table, on its line
        elif key in NUMBER_FIELDS or key == "gpu_memory_utilization":
            serve[key] = _number(value)
        elif key in typed:
            serve[key] = value
        elif value is True and name.startswith("no-"):
            extra[negated] = False
        else:
            extra[name] = value
    if extra:
        serve["extra_args"] = extra
    return serve


def lane_nodes(flags: dict[str, Any], source: Path) -> int:
    """One rank per node, one GPU per node: the lane spans TP nodes; pipeline parallelism would
    place ranks the cockpit does not (its TP is the lane's node count)."""
    pp = str(flags.get("pipeline-parallel-size", 1))
    if pp != "1":
        raise Refused(
            source,
            "command",
            f"--pipeline-parallel-size {pp}: the cockpit runs one tensor-parallel group across the "
            "lane's nodes (TP = nodes); pipeline parallelism is not supported",
        )
    tp = str(flags.get("tensor-parallel-size", 1))
    if not tp.isdigit() or int(tp) < 1:
        raise Refused(source, "command", f"--tensor-parallel-size {tp!r} is not a node count")
    return int(tp)
