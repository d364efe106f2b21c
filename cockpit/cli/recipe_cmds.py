"""`recipe import`: another tool's recipe as a cockpit recipe, checked by the cockpit's own
loader before a byte is written (what it writes, `validate` accepts)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from cockpit.cli.guided import GuidedGroup
from cockpit.cli.inventory_cmds import inventory_option
from cockpit.config import load_inventory
from cockpit.config.inventory import validate_recipe
from cockpit.config.models import is_digest_ref
from cockpit.config.recipe_import.eugr import from_script
from cockpit.config.recipe_import.recipe import apply_sets, lane_name, model_facts, to_toml
from cockpit.config.recipe_import.source import Imported, read_yaml
from cockpit.config.recipe_import.sparkrun import from_yaml
from cockpit.config.toml_source import parse_toml
from cockpit.errors import InputError, Problem
from cockpit.redact import REDACTED, is_secret_name, redact_env, shown

YAML_SUFFIXES = (".yaml", ".yml")
DIGEST_HINT = (
    "the cockpit runs an image by digest only (`[image] ref = repo@sha256:…`; "
    "`sync-image` moves exactly that digest node to node and launch never pulls): on a node "
    "that has the tag, `docker image inspect --format '{{index .RepoDigests 0}}' TAG` prints it "
    "(or `docker buildx imagetools inspect TAG` against the registry); pass it with "
    "--set image.ref=REPO@sha256:HEX, and --set image.image_id=sha256:ID (`docker image "
    "inspect --format '{{.Id}}' TAG`) so preflight can check each node holds that image"
)

CONFIG_FIELDS = ("model.num_attention_heads", "model.num_kv_heads", "model.max_model_len")


def _read(source: Path) -> str:
    try:
        return source.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError([Problem(str(source), None, "", f"cannot read: {exc.strerror}")]) from exc
    except UnicodeDecodeError as exc:
        raise InputError([Problem(str(source), None, "", "not UTF-8 text")]) from exc


def _for_display(imported: Imported) -> Imported:
    """The draft as an output may show it: secret-named env values and flags redacted (the
    file written keeps them: it is the recipe)."""
    table = copy.deepcopy(imported.table)
    if isinstance(env := table.get("env"), dict):
        table["env"] = redact_env({str(k): str(v) for k, v in env.items()})
    serve = table.get("serve")
    if isinstance(serve, dict) and isinstance(extra := serve.get("extra_args"), dict):
        serve["extra_args"] = {
            k: REDACTED if is_secret_name(k) and not isinstance(v, bool) else v
            for k, v in extra.items()
        }
    return Imported(table, imported.not_imported)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(_read(path))
    except json.JSONDecodeError as exc:
        raise InputError([Problem(str(path), exc.lineno, "", f"invalid JSON: {exc.msg}")]) from exc
    if not isinstance(data, dict):
        raise InputError([Problem(str(path), 1, "", "not a model config: not a JSON object")])
    return data


def _hints(problems: list[Problem]) -> list[str]:
    """What to pass to fill each problem the loader found in the draft."""
    hints = []
    for problem in problems:
        if problem.message != "required key is missing":
            continue
        if problem.field in CONFIG_FIELDS:
            hints.append(
                f"hint: fill it with --model-config CONFIG.json (the model's Hugging Face "
                f"config) or --set {problem.field}=VALUE"
            )
        else:
            hints.append(f"hint: fill it with --set {problem.field}=VALUE")
    return list(dict.fromkeys(hints))


@click.group(name="recipe", cls=GuidedGroup)
def recipe_group() -> None:
    """Recipes from other tools."""


SOURCE = click.argument("source", type=click.Path(path_type=Path, dir_okay=False))
OPTIONS = [
    click.option("--name", help="Lane name (default: the source's file name)."),
    click.option(
        "--out",
        type=click.Path(file_okay=False, path_type=Path),
        help="Folder to write NAME.toml in (default: the inventory).",
    ),
    click.option(
        "--set",
        "sets",
        multiple=True,
        metavar="FIELD=VALUE",
        help="Fill or change a recipe field, e.g. --set model.num_attention_heads=48 (repeatable).",
    ),
    click.option(
        "--model-config",
        type=click.Path(path_type=Path, dir_okay=False),
        help="The model's Hugging Face config.json: head counts, maximum context, architecture "
        "and KV bytes per token for [model] (a --set still wins).",
    ),
    click.option(
        "--dry-run", is_flag=True, help="Print the recipe (secrets as <redacted>); write nothing."
    ),
]


def import_options(command: Callable[..., None]) -> Callable[..., None]:
    """The options every import command takes (one list: `recipe import` and `import X`)."""
    for option in reversed(OPTIONS):
        command = option(command)
    return command


@recipe_group.command(name="import")
@SOURCE
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["sparkrun", "eugr"]),
    default=None,
    help="sparkrun: recipe YAML (v2, or v1); eugr: its recipe YAML or a launch script / env "
    "file with the `vllm serve` lines (default: by the file's suffix).",
)
@import_options
@click.pass_context
def import_cmd(ctx: click.Context, source: Path, fmt: str | None, **options: Any) -> None:
    """Write a cockpit recipe from a sparkrun recipe or an eugr launch; what cannot be carried
    over is listed on stderr as `not imported: KEY (why)`."""
    import_recipe(ctx, source, fmt, **options)


@click.group(name="import", cls=GuidedGroup)
def import_group() -> None:
    """Recipes from sparkrun or eugr's spark-vllm-docker (as `cockpit recipe import`)."""


@import_group.command(name="sparkrun")
@SOURCE
@import_options
@click.pass_context
def import_sparkrun(ctx: click.Context, source: Path, **options: Any) -> None:
    """A sparkrun recipe (YAML v2, or v1) as a cockpit recipe."""
    import_recipe(ctx, source, "sparkrun", **options)


@import_group.command(name="eugr")
@SOURCE
@import_options
@click.pass_context
def import_eugr(ctx: click.Context, source: Path, **options: Any) -> None:
    """An eugr launch (its recipe YAML, or a launch script / .env with the `vllm serve` lines)
    as a cockpit recipe."""
    import_recipe(ctx, source, "eugr", **options)


def import_recipe(
    ctx: click.Context,
    source: Path,
    fmt: str | None,
    name: str | None,
    out: Path | None,
    sets: tuple[str, ...],
    model_config: Path | None,
    dry_run: bool,
) -> None:
    """Write the recipe `source` makes (checked by the recipe loader first), or say why not."""
    inventory = load_inventory(inventory_option(ctx))
    text = _read(source)
    yaml_source = source.suffix.lower() in YAML_SUFFIXES
    kind = fmt or ("sparkrun" if yaml_source else "eugr")
    name = name or lane_name(source.stem)
    if yaml_source or kind == "sparkrun":
        imported: Imported = from_yaml(read_yaml(text, source), name, inventory.clusters, source)
    else:
        imported = from_script(text, name, inventory.clusters, source)
    if model_config is not None:
        kv_dtype = str(imported.table["serve"].get("kv_cache_dtype", "auto"))
        imported.table["model"].update(model_facts(_read_json(model_config), kv_dtype))
    apply_sets(imported.table, list(sets))
    target = (out or inventory.root) / f"{name}.toml"
    if not dry_run and target.exists():
        raise InputError(f"{target} exists: choose another --name, or remove it first")
    rendered = to_toml(imported, source, kind)
    for line in imported.lines():
        click.echo(shown(line), err=True)
    image = imported.table.get("image")
    ref = str(image.get("ref", "")) if isinstance(image, dict) else ""
    if not is_digest_ref(ref):
        said = f"image {ref!r} is not a digest pin" if ref else "the source names no image"
        click.echo(shown(f"note: {said}; {DIGEST_HINT}"), err=True)
    _, problems = validate_recipe(parse_toml(rendered, target), inventory.clusters)
    if dry_run:
        click.echo(to_toml(_for_display(imported), source, kind), nl=False)
    if problems:
        for hint in _hints(problems):
            click.echo(hint, err=True)
        what = "the draft above" if dry_run else "nothing written"
        raise InputError([*problems, Problem("", None, "", f"{len(problems)} problem(s): {what}")])
    if dry_run:
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(rendered, encoding="utf-8")
    click.echo(f"wrote {target}: lane {name} on {', '.join(imported.table['lane']['clusters'])}")


COMMANDS = [recipe_group, import_group]
