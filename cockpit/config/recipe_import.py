"""Other tools' recipes as cockpit recipes (pure: text in, a TOML table and a list of what was
left out): sparkrun's recipe YAML (v2, and v1, eugr's run-recipe format it migrates) and eugr's
launch scripts (`vllm serve …` lines, workers `--headless`, head last).

Nothing is dropped quietly: whatever the cockpit cannot represent is returned as (key, why) for
the CLI to print. Shell syntax in a command is refused, never passed on: the cockpit starts vLLM
with an argv whose every word it quotes, so a `$(…)` or `;` that worked in the other tool's shell
would arrive as a literal word, or worse, be trusted.
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomlkit
import yaml

from cockpit.config.models import NAME_PATTERN, Cluster, ServeContract
from cockpit.config.rules import RENDERED_FLAGS
from cockpit.errors import InputError, Problem
from cockpit.redact import shown

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
PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
SHELL_OPERATORS = set(";&|<>()`$*?\n")  # a line break ends a shell command too
KV_DTYPE_BYTES = {"fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "bfloat16": 2, "float16": 2, "auto": 2}


@dataclass
class Imported:
    """A cockpit recipe as a TOML table, and what could not be carried over, with why."""

    table: dict[str, Any]
    not_imported: list[tuple[str, str]] = field(default_factory=list)

    def skip(self, key: str, why: str) -> None:
        self.not_imported.append((key, why))

    def lines(self) -> list[str]:
        return [f"not imported: {key} ({why})" for key, why in self.not_imported]


class Refused(InputError):
    """The source asks for something the cockpit must not or cannot run (exit 2)."""

    def __init__(self, source: Path, key: str, message: str, line: int | None = None) -> None:
        super().__init__([Problem(str(source), line, key, message)])

    def at(self, lines: dict[str, int]) -> Refused:
        """The same refusal at the line of its top-level key in the source."""
        problem = self.problems[0]
        line = problem.line or lines.get(problem.field.split(".", 1)[0])
        return Refused(Path(problem.file), problem.field, problem.message, line)


@dataclass(frozen=True)
class YamlRecipe:
    """A parsed YAML recipe and the line of each top-level key (for the refusals)."""

    data: dict[str, Any]
    lines: dict[str, int]


# --------------------------------------------------------------------------- reading


def read_yaml(text: str, source: Path) -> YamlRecipe:
    """The YAML mapping (safe_load: no tags that construct objects) and each top-level key's line;
    broken YAML is one problem naming file and line."""
    try:
        data = yaml.safe_load(text)
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        reason = " ".join(str(getattr(exc, "problem", None) or exc).split())
        line = mark.line + 1 if mark is not None else None
        raise InputError([Problem(str(source), line, "", f"invalid YAML: {reason}")]) from exc
    if not isinstance(data, dict):
        raise InputError([Problem(str(source), 1, "", "not a recipe: the YAML is not a mapping")])
    lines = {str(k.value): k.start_mark.line + 1 for k, _ in getattr(root, "value", [])}
    return YamlRecipe(data, lines)


def shell_syntax(command: str) -> str | None:
    """The first character a shell would act on (an operator, `$`, a backtick) outside single
    quotes, with its context; None when the text is plain words."""
    quote = ""
    escaped = False
    for index, char in enumerate(command):
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote == "'":
            quote = "" if char == "'" else quote
        elif char in "'\"" and not quote:
            quote = char
        elif char == '"' and quote == '"':
            quote = ""
        elif (quote == '"' and char in "$`") or (not quote and char in SHELL_OPERATORS):
            return command[max(0, index - 20) : index + 20].strip()
    return None


def split_command(command: str, source: Path, key: str, line: int | None = None) -> list[str]:
    """A command line as argv words, line continuations joined; shell syntax refused."""
    joined = re.sub(r"\\[ \t]*\r?\n", " ", command).strip()
    if found := shell_syntax(joined):
        raise Refused(
            source,
            key,
            f"shell syntax in the command ({found!r}): the cockpit starts vLLM with an argv, "
            "never through a shell; write the values out (quoted words stay words)",
            line,
        )
    try:
        return shlex.split(joined, comments=True)  # a shell's `#` starts a comment
    except ValueError as exc:
        raise Refused(source, key, f"cannot split the command into words: {exc}", line) from exc


def fill(template: str, values: dict[str, Any]) -> str:
    """sparkrun's `{placeholder}` filling: known keys replaced until the text stops changing
    (nested defaults); other braces (JSON) stay; `{{`/`}}` are escapes when the text uses them."""
    escapes = "{{" in template
    text = template.replace("{{", "\x01").replace("}}", "\x02") if escapes else template

    def value(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            return match.group(0)
        item = values[key]
        return json.dumps(item) if isinstance(item, dict | list) else str(item)

    for _ in range(10):
        filled = PLACEHOLDER.sub(value, text)
        if filled == text:
            break
        text = filled
    return text.replace("\x01", "{").replace("\x02", "}")


# --------------------------------------------------------------------------- vLLM's command line


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


# --------------------------------------------------------------------------- the recipe


def _image(container: str | None) -> dict[str, Any]:
    """[image]: the source's reference, kept as `publication` too (a tag, once `--set
    image.ref=` pins the digest, stays on record)."""
    return {"ref": container, "publication": container} if container else {}


def _model(repo: Any, revision: Any, metadata: dict[str, Any], kv_dtype: str) -> dict[str, Any]:
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
    serve = serve_table(flags, result)
    serve.setdefault("served_model_name", str(data.get("model", "")))
    model = _model(
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
        "image": _image(data.get("container")),
        "launcher": {"entrypoint": ["vllm", "serve"]},
        "model": model,
        "serve": serve,
        "env": {str(k): _env_value(str(k), v, values, result) for k, v in env.items()},
    }
    result.table["env"] = {k: v for k, v in result.table["env"].items() if v is not None}
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
    serve = serve_table(flags, result)
    serve.setdefault("served_model_name", str(model or ""))
    result.table = {
        "lane": {
            "name": name,
            "nodes": nodes,
            "clusters": fitting_clusters(nodes, clusters, 1, None, source),
        },
        "image": _image(image),
        "launcher": {"entrypoint": ["vllm", "serve"]},
        "model": _model(
            model or "", flags.get("revision"), {}, str(serve.get("kv_cache_dtype", "auto"))
        ),
        "serve": serve,
        "env": env,
    }
    return result


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
