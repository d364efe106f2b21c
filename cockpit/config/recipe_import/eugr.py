"""eugr's launches (a profile script, an env file, or the ranks' `vllm serve …` lines: workers
`--headless` first, head last) as a cockpit recipe table.
"""

from __future__ import annotations

import re
from pathlib import Path

from cockpit.config.models import Cluster
from cockpit.config.recipe_import.recipe import fitting_clusters, image_table, model_table
from cockpit.config.recipe_import.source import Imported, Refused, split_command
from cockpit.config.recipe_import.vllm_flags import (
    api_key_env,
    lane_nodes,
    parse_flags,
    serve_table,
)
from cockpit.config.rules import RENDERED_FLAGS


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Lines with their backslash continuations joined, each with the file line it starts on."""
    joined: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, line in enumerate(text.splitlines(), 1):
        start, before = pending or (number, "")
        if re.search(r"\\[ \t]*$", line):
            pending = (start, before + re.sub(r"\\[ \t]*$", " ", line))
        else:
            joined.append((start, before + line))
            pending = None
    if pending:
        joined.append(pending)
    return joined


def from_script(text: str, name: str, clusters: dict[str, Cluster], source: Path) -> Imported:
    """An eugr launch (a profile script, an env file, or the ranks' command lines: workers
    `--headless` first, head last) as a cockpit recipe table."""
    result = Imported({})
    env: dict[str, str] = {}
    ranks: list[tuple[int, list[str]]] = []
    image = None
    for number, line in _logical_lines(text):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        assignment = re.fullmatch(r"(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)", stripped)
        if assignment:
            words = split_command(assignment.group(2) or "''", source, "", number)
            env[assignment.group(1)] = " ".join(words)
            continue
        words = split_command(stripped, source, "", number)
        start = words.index("vllm") if "vllm" in words else -1
        if start < 0 or words[start + 1 : start + 2] != ["serve"]:
            result.skip(f"line {number}", f"{stripped[:60]!r}: not a vLLM serve line or a variable")
            continue
        if start:
            image = image or (words[start - 1] if words[0] == "docker" else None)
            for index, word in enumerate(words[: start - 1]):
                if word in ("-e", "--env") and "=" in words[index + 1]:
                    key, _, value = words[index + 1].partition("=")
                    env[key] = value
            result.skip(f"line {number} before vllm", "the cockpit writes its own `docker run`")
        ranks.append((number, words[start:]))
    if not ranks:
        raise Refused(source, "", "no `vllm serve …` line in the launch")
    heads = [(n, w) for n, w in ranks if "--headless" not in w]
    if len(heads) != 1:
        raise Refused(source, "", f"{len(heads)} head lines (without --headless); one expected")
    _, head = heads[0]
    model, flags = parse_flags(head, result)
    for number, words in ranks:
        worker_flags = parse_flags(words, Imported({}))[1]
        same = {k: v for k, v in worker_flags.items() if k not in RENDERED_FLAGS}
        if same != {k: v for k, v in flags.items() if k not in RENDERED_FLAGS}:
            result.skip(f"line {number}", "a rank whose flags differ from the head's")
    nodes = lane_nodes(flags, source)  # a profile without --nnodes: its launcher adds TP ranks
    if str(flags.get("nnodes", nodes)) != str(nodes):
        raise Refused(
            source, "", f"--nnodes {flags['nnodes']} with TP {nodes}: the cockpit runs TP = nodes"
        )
    env |= api_key_env(flags, result)
    serve = serve_table(flags, result)
    serve.setdefault("served_model_name", str(model or ""))
    result.table = {
        "lane": {
            "name": name,
            "nodes": nodes,
            "clusters": fitting_clusters(nodes, clusters, 1, None, source),
        },
        "image": image_table(image),
        "launcher": {"entrypoint": ["vllm", "serve"]},
        "model": model_table(
            model or "", flags.get("revision"), {}, str(serve.get("kv_cache_dtype", "auto"))
        ),
        "serve": serve,
        "env": env,
    }
    return result
