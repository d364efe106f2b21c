"""Reading another tool's recipe: YAML with each key's line, command lines as words with shell
syntax refused, sparkrun's `{placeholder}` filling; and what an import returns or refuses.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from cockpit.errors import InputError, Problem

PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
SHELL_OPERATORS = set(";&|<>()`$*?\n")  # a line break ends a shell command too


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
