"""The manual's reference tables, generated from the code at build time so they cannot drift:
the inventory schema from the pydantic models, the keys from the keymap, the metrics from the
exporter's families and the advisor's rules from their definitions. Pure: text in, text out."""

from __future__ import annotations

import ast
import inspect
import json
import types
from collections.abc import Callable, Iterator
from enum import Enum
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from cockpit.config.models import ClustersFile, Recipe
from cockpit.exporter.families import BOOT_PHASES, ExportSnapshot, families
from cockpit.telemetry.gpu import GpuSample
from cockpit.tui import keymap
from cockpit.tui.state import advisor
from cockpit.tui.state.views import EngineView, FleetSnapshot, LanePhase, NodeHealth, NodeView

SCALARS = {str: "string", int: "integer", float: "float", bool: "boolean", Any: "any value"}
BOUNDS = {"ge": "≥", "gt": ">", "le": "≤", "lt": "<", "min_length": "length ≥"}


def _cell(text: str) -> str:
    """Text that stays inside one cell of a markdown table."""
    return " ".join(text.split()).replace("|", "\\|")


def _constraints(metadata: list[Any]) -> str:
    """What pydantic checks beyond the type: bounds, a pattern, a named validator."""
    said = []
    for item in metadata:
        for attr, sign in BOUNDS.items():
            if getattr(item, attr, None) is not None:
                said.append(f"{sign} {getattr(item, attr)}")
        if getattr(item, "pattern", None):
            said.append(f"matching `{item.pattern}`")
        if callable(getattr(item, "func", None)):  # AfterValidator(_absolute): "absolute"
            said.append(item.func.__name__.strip("_").replace("_", " "))
    return f" ({', '.join(said)})" if said else ""


def type_name(tp: Any) -> str:
    """A field's type as a TOML writer reads it: `integer (≥ 1)`, `array of string`, …"""
    origin = get_origin(tp)
    if origin is Annotated:
        base, *metadata = get_args(tp)
        return type_name(base) + _constraints(metadata)
    if origin in (Union, types.UnionType):
        return " or ".join(type_name(arg) for arg in get_args(tp) if arg is not type(None))
    if origin is list:
        return f"array of {type_name(get_args(tp)[0])}"
    if origin is dict:
        key, value = get_args(tp)
        return f"table: {type_name(key)} keys, {type_name(value)} values"
    if inspect.isclass(tp) and issubclass(tp, Enum):
        return "one of " + ", ".join(f'`"{member.value}"`' for member in tp)
    if inspect.isclass(tp) and issubclass(tp, BaseModel):
        return f"table ({tp.__name__})"
    return SCALARS.get(tp, getattr(tp, "__name__", str(tp)))


def _default(field: Any) -> str:
    if field.is_required():
        return "**required**"
    value = field.default_factory() if field.default is PydanticUndefined else field.default
    if isinstance(value, BaseModel):
        return "its table's defaults"
    if value is None:
        return "unset"
    if isinstance(value, Enum):
        value = value.value
    return "`" + (json.dumps(value) if isinstance(value, str) else str(value).lower()) + "`"


def _model_of(tp: Any) -> tuple[type[BaseModel], str] | None:
    """A sub-table's model and how its TOML header reads below the parent's: `.x`, `.x.NAME`,
    `[[x]]` (an array of tables)."""
    origin, args = get_origin(tp), get_args(tp)
    if inspect.isclass(tp) and issubclass(tp, BaseModel):
        return tp, ""
    if origin is dict and inspect.isclass(args[1]) and issubclass(args[1], BaseModel):
        return args[1], ".NAME"
    if origin is list and inspect.isclass(args[0]) and issubclass(args[0], BaseModel):
        return args[0], "[]"
    return None


def _sections(model: type[BaseModel], path: str) -> Iterator[str]:
    doc = inspect.getdoc(model) if model.__doc__ else ""
    rows, below = [], []
    for name, field in model.model_fields.items():
        sub = _model_of(field.annotation)
        if sub is not None:
            below.append((sub[0], f"{path}.{name}{sub[1]}".lstrip(".")))
            continue
        typed = type_name(field.annotation) + _constraints(field.metadata)
        table = f"[{path}.{name}]".replace("[.", "[")  # a table of its own: `[image.versions]`
        key = table if get_origin(field.annotation) is dict else name
        rows.append(
            f"| `{key}` | {_cell(typed)} | {_default(field)} | {_cell(field.description or '')} |"
        )
    if rows:
        header = f"[[{path[:-2]}]]" if path.endswith("[]") else f"[{path}]" if path else "Top level"
        yield f"### `{header}`" if path else f"### {header}"
        yield ""
        if doc and doc != inspect.getdoc(BaseModel) and not doc.startswith("Base:"):
            yield doc
            yield ""
        yield "| key | type | default | description |"
        yield "| --- | --- | --- | --- |"
        yield from rows
        yield ""
    for sub_model, sub_path in below:
        yield from _sections(sub_model, sub_path)


def schema(model: type[BaseModel]) -> str:
    """Every table and key a file of `model` may hold, with its type, default and description."""
    return "\n".join(_sections(model, ""))


def recipe_schema() -> str:
    return schema(Recipe)


def clusters_schema() -> str:
    return schema(ClustersFile)


def keys() -> str:
    """Every binding of the keymap: key, id for `[keymap]`, what it does, where it is off."""
    out = [
        "| key | id (`[keymap]`) | does | footer | `--readonly` |",
        "| --- | --- | --- | --- | --- |",
    ]
    for binding in (*keymap.MAIN_BINDINGS, *keymap.TAIL_BINDINGS):
        shown = binding.key_display or binding.key
        what = binding.description + (f": {binding.tooltip}" if binding.tooltip else "")
        if binding.action in keymap.DEMO_ONLY:
            what += " (`cockpit demo` only)"
        footer = "yes" if binding.show else ""
        off = "off" if binding.action in keymap.NODE_CHANGING else ""
        out.append(f"| `{shown}` | `{binding.id}` | {_cell(what)} | {footer} | {off} |")
    return "\n".join(out) + "\n"


def metrics() -> str:
    """The exporter's metric families as it builds them (from an empty fleet: names, types,
    labels and help, no samples)."""
    empty = FleetSnapshot(
        at=0.0,
        nodes=(),
        lanes=(),
        engines={},
        nccl={},
        nccl_ranks={},
        logs={},
        dropped={},
        ops=(),
        bench=(),
    )
    out = ["| metric | type | labels | what |", "| --- | --- | --- | --- |"]
    for family in families(ExportSnapshot(fleet=empty)):
        name = family.name + ("_total" if family.type == "counter" else "")
        labels = ", ".join(family._labelnames)  # prometheus_client keeps them for add_metric
        out.append(f"| `{name}` | {family.type} | {labels} | {_cell(family.documentation)} |")
    out += ["", "| label | its values |", "| --- | --- |"]
    out.append("| `state` | " + ", ".join(f"`{phase.value}`" for phase in LanePhase) + " |")
    out.append("| `phase` | " + ", ".join(f"`{phase}`" for phase in BOOT_PHASES) + " |")
    return "\n".join(out) + "\n"


def _constants(module: types.ModuleType) -> Iterator[tuple[str, Any, str]]:
    """A module's numeric constants with the docstring under each, read from its source."""
    body = ast.parse(inspect.getsource(module)).body
    for stmt, after in zip(body, [*body[1:], None], strict=True):
        if not (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant)):
            continue
        name = stmt.targets[0].id if isinstance(stmt.targets[0], ast.Name) else ""
        if not name.isupper() or not isinstance(stmt.value.value, int | float):
            continue
        doc = ""
        if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
            doc = str(after.value.value)
        yield name, getattr(module, name), doc


def advisor_rules() -> str:
    """Each rule's hint as the advisor words it, from a lane and a node that trip every rule
    (no recipe at hand, so the fields are named without their values), then its thresholds."""
    engine = EngineView(
        lane_key="LANE@CLUSTER",
        at=0.0,
        running=2,
        waiting=6,
        kv_usage=0.5,
        pool_tokens=None,
        pool_gib=None,
        prefix_hit_rate=0.0,
        preemptions_total=1,
        prompt_tps=None,
        gen_tps=None,
        spec_acceptance=None,
        kv_history=(),
        gen_history=(),
        prompt_history=(),
        window_s=60.0,
        finished=(("length", 8.0), ("stop", 2.0)),
        preemptions_recent=1,
        backlog_s=advisor.BACKLOG_S + 15,
        prefix_caching=False,
    )
    node = NodeView(
        name="NODE",
        health=NodeHealth.LIVE,
        age_s=0.0,
        error=None,
        gpu=GpuSample(temperature_c=advisor.GPU_HOT_C + 3),
        memory=None,
        ranks=(),
        util_history=(),
    )
    hints = (*advisor.engine_hints(engine, None), *advisor.node_hints(node))
    out = ["| rule | title | the hint, on an example |", "| --- | --- | --- |"]
    out += [f"| `{h.rule}` | {h.title} | {_cell(h.text)} |" for h in hints]
    out += ["", "| threshold | value | why |", "| --- | --- | --- |"]
    out += [f"| `{n}` | {v:g} | {_cell(doc)} |" for n, v, doc in _constants(advisor)]
    return "\n".join(out) + "\n"


GENERATED: dict[str, Callable[[], str]] = {
    "recipe-schema": recipe_schema,
    "clusters-schema": clusters_schema,
    "keys": keys,
    "metrics": metrics,
    "advisor": advisor_rules,
}
"""What a page's `<!-- reference: NAME -->` line is replaced by."""
