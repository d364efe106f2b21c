"""pydantic's validation errors as the inventory's one-line problems: file, line, field, fix.

One typo is one problem: a misspelt key is an unknown key AND a missing required one to pydantic;
the operator gets the first, with the name it should have been, not both.
"""

from __future__ import annotations

import difflib
from typing import Any, get_args, get_origin

from pydantic import BaseModel, ValidationError

from cockpit.config.toml_source import TomlSource
from cockpit.errors import Problem
from cockpit.redact import REDACTED, is_secret_name

Loc = tuple[str | int, ...]


def _allowed_keys(model: type[BaseModel], loc: Loc) -> list[str]:
    """Field names of the model that holds the last element of loc."""
    current: Any = model
    parts = iter(loc[:-1])
    for part in parts:
        if isinstance(part, int):
            continue
        fields = getattr(current, "model_fields", None)
        if not fields or part not in fields:
            return []
        annotation = fields[part].annotation
        if get_origin(annotation) is dict:  # `[clusters.NAME]`: the next part is an entry's name
            annotation = get_args(annotation)[1]
            next(parts, None)
        candidates = [annotation, *get_args(annotation)]
        nested = [c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)]
        if not nested:
            return []
        current = nested[0]
    return list(getattr(current, "model_fields", {}))


def _message(item: Any, model: type[BaseModel], loc: Loc) -> str:
    secret = any(is_secret_name(str(part)) for part in loc if part != "[key]")  # a table name
    got = REDACTED if secret else repr(item["input"])  # repr escapes control characters
    if item["type"] == "extra_forbidden":
        allowed = _allowed_keys(model, loc)
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"allowed: {', '.join(allowed)}"
        return f"unknown key {loc[-1]!r} ({hint})"
    if item["type"] == "missing":
        return "required key is missing"
    if item["type"] == "value_error":
        return f"{item['ctx']['error']} (got {got})"
    if item["type"] == "string_pattern_mismatch":
        return f"{got} is not allowed here (must match {item['ctx']['pattern']})"
    return f"{item['msg']} (got {got})"


def _misspelt(model: type[BaseModel], items: list[Any]) -> set[Loc]:
    """The missing keys that an unknown key beside them misspells (`fabirc` for `fabric`)."""
    missing = {tuple(i["loc"]) for i in items if i["type"] == "missing"}
    explained = set()
    for item in items:
        loc = tuple(item["loc"])
        if item["type"] != "extra_forbidden":
            continue
        siblings = [str(m[-1]) for m in missing if m[:-1] == loc[:-1]]
        close = difflib.get_close_matches(str(loc[-1]), siblings, n=1)
        allowed = difflib.get_close_matches(str(loc[-1]), _allowed_keys(model, loc), n=1)
        if close and allowed == close:  # the unknown key's own hint names the missing one
            explained.add((*loc[:-1], close[0]))
    return explained


def pydantic_problems(
    src: TomlSource, model: type[BaseModel], error: ValidationError
) -> list[Problem]:
    """One problem per mistake, with the line of the key and the allowed keys."""
    items = error.errors()
    misspelt = _misspelt(model, items)
    return [
        src.problem(tuple(item["loc"]), _message(item, model, tuple(item["loc"])))
        for item in items
        if tuple(item["loc"]) not in misspelt
    ]
