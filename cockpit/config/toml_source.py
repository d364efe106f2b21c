"""TOML loading that remembers where each key stands, so errors can name file and line."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cockpit.errors import InputError, Problem

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(
    r"^\s*((?:\"[^\"]*\"|'[^']*'|[A-Za-z0-9_\-]+)(?:\s*\.\s*(?:\"[^\"]*\"|'[^']*'|[A-Za-z0-9_\-]+))*)\s*="
)
_PART = re.compile(r"\"([^\"]*)\"|'([^']*)'|([A-Za-z0-9_\-]+)")


def _split_key(text: str) -> tuple[str, ...]:
    return tuple(a or b or c for a, b, c in _PART.findall(text))


def locate_keys(text: str) -> dict[tuple[str | int, ...], int]:
    """Map every table header and key path in TOML text to its 1-based line number.

    Array-of-tables entries get their index in the path, like pydantic's error locations.
    Multi-line values are skipped roughly (lines inside brackets or triple quotes), which is
    enough for pointing at keys.
    """
    lines: dict[tuple[str | int, ...], int] = {}
    table: tuple[str | int, ...] = ()
    array_counts: dict[tuple[str, ...], int] = {}
    depth = 0
    in_multiline = False
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if in_multiline:
            if line.count('"""') % 2 == 1 or line.count("'''") % 2 == 1:
                in_multiline = False
            continue
        if depth > 0:
            depth += line.count("[") + line.count("{") - line.count("]") - line.count("}")
            continue
        if not line or line.startswith("#"):
            continue
        header = _HEADER.match(line)
        if header and not _KEY.match(line):
            path = _split_key(header.group(2))
            if header.group(1) == "[[":
                index = array_counts.get(path, -1) + 1
                array_counts[path] = index
                table = (*path, index)
            else:
                table = path
            lines.setdefault(table, number)
            continue
        key = _KEY.match(line)
        if key:
            path = (*table, *_split_key(key.group(1)))
            lines.setdefault(path, number)
            value = line[key.end() :]
            if value.count('"""') % 2 == 1 or value.count("'''") % 2 == 1:
                in_multiline = True
            depth = value.count("[") + value.count("{") - value.count("]") - value.count("}")
            depth = max(depth, 0)
    return lines


@dataclass(frozen=True)
class TomlSource:
    """A parsed TOML file plus the line of each key, for error messages."""

    path: Path
    data: dict[str, Any]
    lines: dict[tuple[str | int, ...], int] = field(default_factory=dict)

    def line_of(self, loc: tuple[str | int, ...]) -> int | None:
        """The line of the deepest known prefix of loc (the key itself, else its table)."""
        for end in range(len(loc), 0, -1):
            line = self.lines.get(tuple(loc[:end]))
            if line is not None:
                return line
        return None

    def problem(self, loc: tuple[str | int, ...], message: str) -> Problem:
        field_name = ".".join(str(part) for part in loc)
        return Problem(str(self.path), self.line_of(loc), field_name, message)


def read_toml(path: Path) -> TomlSource:
    """Parse a TOML file; a syntax error becomes an InputError naming file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError([Problem(str(path), None, "", f"cannot read: {exc.strerror}")]) from exc
    except UnicodeDecodeError as exc:
        raise InputError([Problem(str(path), None, "", "not UTF-8 text")]) from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        line = int(match.group(1)) if match else None
        reason = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        raise InputError([Problem(str(path), line, "", f"invalid TOML: {reason}")]) from exc
    return TomlSource(path, data, locate_keys(text))
