"""The cockpit recipe an import writes: its lane name and clusters, its [image] and [model]
tables (with what a config.json tells), `--set` values, and the TOML headed by what was left out.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import tomlkit

from cockpit.config.models import NAME_PATTERN, Cluster
from cockpit.config.recipe_import.source import Imported, Refused
from cockpit.errors import InputError
from cockpit.redact import shown

KV_DTYPE_BYTES = {"fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "bfloat16": 2, "float16": 2, "auto": 2}


def fitting_clusters(
    nodes: int, clusters: dict[str, Cluster], low: int, high: int | None, source: Path
) -> list[str]:
    """Clusters of exactly the lane's node count, inside the source's min/max nodes; production
    clusters last (the first is the lane's default: an imported lane is tried elsewhere first)."""
    if nodes < low or (high is not None and nodes > high):
        bounds = f"{low}..{high if high is not None else '∞'}"
        raise Refused(source, "min_nodes", f"TP {nodes} is outside the recipe's nodes {bounds}")
    fits = sorted(
        (name for name, cluster in clusters.items() if len(cluster.nodes) == nodes),
        key=lambda name: clusters[name].production,
    )
    if not fits:
        sizes = ", ".join(f"{n} ({len(c.nodes)})" for n, c in clusters.items()) or "none"
        raise Refused(
            source,
            "min_nodes",
            f"no cluster of {nodes} node(s) in the inventory (one rank per node, TP {nodes}); "
            f"clusters: {sizes}",
        )
    return fits


def lane_name(text: str) -> str:
    """A file stem as a lane name (lowercase, other characters as `-`)."""
    name = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._")[:63]
    return name if re.match(NAME_PATTERN, name) else "imported"


def image_table(container: str | None) -> dict[str, Any]:
    """[image]: the source's reference, kept as `publication` too (a tag, once `--set
    image.ref=` pins the digest, stays on record)."""
    return {"ref": container, "publication": container} if container else {}


def model_table(
    repo: Any, revision: Any, metadata: dict[str, Any], kv_dtype: str
) -> dict[str, Any]:
    """[model]: the repo and its pin, and what sparkrun's metadata knows of its shape."""
    model: dict[str, Any] = {"repo": repo}
    if revision:
        model["revision"] = str(revision)
    if metadata.get("num_kv_heads"):
        model["num_kv_heads"] = metadata["num_kv_heads"]
    if metadata.get("quantization"):
        model["quantization"] = str(metadata["quantization"])
    shape = [metadata.get(k) for k in ("num_layers", "num_kv_heads", "head_dim")]
    if all(isinstance(v, int) for v in shape) and kv_dtype in KV_DTYPE_BYTES:
        layers, heads, dim = shape
        model["kv_bytes_per_token"] = 2 * layers * heads * dim * KV_DTYPE_BYTES[kv_dtype]
    model["cache_namespace"] = lane_name(str(repo).rsplit("/", 1)[-1])
    return model


def model_facts(config: dict[str, Any], kv_dtype: str) -> dict[str, Any]:
    """What a Hugging Face config.json tells the recipe's [model] (a multimodal model's text
    config when it has one): head counts for the TP check, the maximum context, the KV bytes per
    token for the KV pane."""
    text = config.get("text_config") if "num_attention_heads" not in config else config
    text = text if isinstance(text, dict) else config
    facts: dict[str, Any] = {}
    heads = text.get("num_attention_heads")
    if isinstance(heads, int):
        facts["num_attention_heads"] = heads
        facts["num_kv_heads"] = text.get("num_key_value_heads") or heads
    if isinstance(text.get("max_position_embeddings"), int):
        facts["max_model_len"] = text["max_position_embeddings"]
    architectures = config.get("architectures") or text.get("architectures")
    if isinstance(architectures, list) and architectures:
        facts["architecture"] = str(architectures[0])
    layers, hidden = text.get("num_hidden_layers"), text.get("hidden_size")
    dim = text.get("head_dim") or (hidden // heads if isinstance(hidden, int) and heads else None)
    kv = facts.get("num_kv_heads")
    if all(isinstance(v, int) for v in (layers, dim, kv)) and kv_dtype in KV_DTYPE_BYTES:
        facts["kv_bytes_per_token"] = 2 * layers * kv * dim * KV_DTYPE_BYTES[kv_dtype]
    return facts


def apply_sets(table: dict[str, Any], sets: list[str]) -> None:
    """`--set serve.max_num_seqs=64`: a value as TOML (a number, true, "text", [1, 2]), else
    the text itself, at a dotted path of the recipe."""
    for item in sets:
        path, equals, raw = item.partition("=")
        if not equals or not path:
            raise InputError(f"--set {item!r}: write FIELD=VALUE, e.g. serve.max_num_seqs=64")
        try:
            value = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw
        *tables, key = path.split(".")
        target = table
        for part in tables:
            target = target.setdefault(part, {})
            if not isinstance(target, dict):
                raise InputError(f"--set {item!r}: {part} is not a table")
        target[key] = value


def to_toml(imported: Imported, source: Path, kind: str) -> str:
    """The recipe as TOML, headed by where it came from and what it left out (the file keeps
    the record the import printed)."""
    document = tomlkit.document()
    head = f"Imported by `cockpit recipe import` from {source.name} ({kind})."
    document.add(tomlkit.comment(shown(head)))
    for line in imported.lines():  # a value left out is not kept: a secret's stays hidden
        document.add(tomlkit.comment(shown(line)))
    document.add(tomlkit.nl())
    for section in ("lane", "image", "launcher", "model", "serve", "env"):
        document[section] = imported.table.get(section, {})
    for section, value in imported.table.items():  # --set may name any table
        if section not in document:
            document[section] = value
    return tomlkit.dumps(document)
