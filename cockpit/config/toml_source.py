"""TOML loading that remembers where each key stands, so errors can name file and line."""

from __future__ import annotations

import re
import tomllib
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cockpit.errors import InputError, Problem

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_SCALAR_END = re.compile(r"[,\]}#\n]")  # numbers, booleans and dates contain none of these

Loc = tuple[str | int, ...]


class _Locator:
    """A scanner for valid TOML (tomllib has accepted the text already) that knows every string
    form, comments, arrays spanning lines and inline tables, so a `[` or `=` in a value is text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.starts = [0, *(m.end() for m in re.finditer("\n", text))]
        self.lines: dict[Loc, int] = {}  # written keys, headers and array elements
        self.implied: dict[Loc, int] = {}  # tables a dotted key or a header implies
        self.arrays: dict[Loc, int] = {}  # each array of tables → the index of its last [[entry]]

    def line(self) -> int:
        return bisect_right(self.starts, self.pos)

    def record(self, loc: Loc, line: int) -> None:
        self.lines.setdefault(loc, line)
        for end in range(1, len(loc)):
            self.implied.setdefault(loc[:end], line)

    def skip(self, newlines: bool) -> None:
        """Past blanks and comments, and past line ends when `newlines`."""
        text, end = self.text, len(self.text)
        while self.pos < end:
            char = text[self.pos]
            if char in " \t\r" or (newlines and char == "\n"):
                self.pos += 1
            elif char == "#":
                newline = text.find("\n", self.pos)
                self.pos = end if newline < 0 else newline
            else:
                return

    def document(self) -> dict[Loc, int]:
        table: Loc = ()
        while True:
            self.skip(newlines=True)
            start = self.pos
            if start >= len(self.text):
                break
            if self.text[start] == "[":
                array = self.text.startswith("[[", start)
                self.pos += 2 if array else 1
                parts = self.key()
                table = self.array_entry(parts) if array else self.resolve(parts)
                self.record(table, self.line())
                closing = self.text.find("]", self.pos)
                self.pos = len(self.text) if closing < 0 else closing + (2 if array else 1)
            else:
                self.keyval(table)
                if self.pos == start:
                    break  # not TOML that tomllib accepts: nothing more can be told
        return {**self.implied, **self.lines}

    def resolve(self, parts: Loc) -> Loc:
        """A header's path with the index of the current entry of each array of tables in it."""
        loc: Loc = ()
        for part in parts:
            loc = (*loc, part)
            if loc in self.arrays:
                loc = (*loc, self.arrays[loc])
        return loc

    def array_entry(self, parts: Loc) -> Loc:
        """`[[parts]]`: the next entry of that array (of the current entry of its parents')."""
        array = (*self.resolve(parts[:-1]), parts[-1])
        self.arrays[array] = index = self.arrays.get(array, -1) + 1
        return (*array, index)

    def key(self) -> Loc:
        """A dotted key: bare, "basic" or 'literal' parts, blanks around the dots."""
        parts: list[str] = []
        while True:
            self.skip(newlines=False)
            char = self.text[self.pos : self.pos + 1]
            if char in ('"', "'"):
                start = self.pos
                self.string()
                parts.append(_unquote(self.text[start : self.pos]))
            elif match := _BARE_KEY.match(self.text, self.pos):
                parts.append(match.group())
                self.pos = match.end()
            else:
                return tuple(parts)
            self.skip(newlines=False)
            if self.text[self.pos : self.pos + 1] != ".":
                return tuple(parts)
            self.pos += 1

    def keyval(self, table: Loc) -> None:
        line = self.line()
        loc = (*table, *self.key())
        self.skip(newlines=False)
        if len(loc) == len(table) or self.text[self.pos : self.pos + 1] != "=":
            return
        self.pos += 1
        self.record(loc, line)
        self.skip(newlines=False)
        self.value(loc)

    def value(self, loc: Loc) -> None:
        char = self.text[self.pos : self.pos + 1]
        if char in ('"', "'"):
            self.string()
        elif char == "[":
            self.pos += 1
            self.items(loc)
        elif char == "{":
            self.pos += 1
            self.inline_table(loc)
        else:
            match = _SCALAR_END.search(self.text, self.pos)
            self.pos = match.start() if match else len(self.text)

    def items(self, loc: Loc) -> None:
        """An array's elements, each at its line (a multi-line list points at the bad one)."""
        index = 0
        while self.pos < len(self.text):
            self.skip(newlines=True)
            if self.text[self.pos : self.pos + 1] in ("]", ""):
                self.pos += 1
                return
            start = self.pos
            self.record((*loc, index), self.line())
            self.value((*loc, index))
            self.skip(newlines=True)
            if self.text[self.pos : self.pos + 1] == ",":
                self.pos += 1
            elif self.pos == start:
                return
            index += 1

    def inline_table(self, loc: Loc) -> None:
        while self.pos < len(self.text):
            self.skip(newlines=True)  # TOML 1.0 keeps them on one line; 1.1 does not
            if self.text[self.pos : self.pos + 1] in ("}", ""):
                self.pos += 1
                return
            start = self.pos
            self.keyval(loc)
            self.skip(newlines=True)
            if self.text[self.pos : self.pos + 1] == ",":
                self.pos += 1
            elif self.pos == start:
                return

    def string(self) -> None:
        """Past one string of any of TOML's four forms (the cursor is on its opening quote)."""
        text = self.text
        quote = text[self.pos]
        escapes = quote == '"'
        delimiter = quote * 3 if text.startswith(quote * 3, self.pos) else quote
        at = self.pos + len(delimiter)
        while at < len(text):
            if escapes and text[at] == "\\":
                at += 2
            elif text.startswith(delimiter, at):
                at += len(delimiter)
                while len(delimiter) == 3 and text[at : at + 1] == quote:
                    at += 1  # `""""` ends a multi-line string whose text ends with a quote
                break
            else:
                at += 1
        self.pos = min(at, len(text))


def _unquote(token: str) -> str:
    """A quoted key's text: tomllib decodes a basic string's escapes (`"a\\u0062"` is `ab`)."""
    if token.startswith("'") or "\\" not in token:
        return token[1:-1]
    return tomllib.loads(f"k = {token}")["k"]


def locate_keys(text: str) -> dict[Loc, int]:
    """Map every table header, key path and array element of TOML text to its 1-based line.

    Array-of-tables entries get their index in the path, like pydantic's error locations; a
    table a header or dotted key only implies gets the line that first implies it.
    """
    return _Locator(text).document()


@dataclass(frozen=True)
class TomlSource:
    """A parsed TOML file plus the line of each key, for error messages."""

    path: Path
    data: dict[str, Any]
    lines: dict[Loc, int] = field(default_factory=dict)

    def line_of(self, loc: Loc) -> int | None:
        """The line of the deepest known prefix of loc (the key itself, else its table)."""
        for end in range(len(loc), 0, -1):
            line = self.lines.get(tuple(loc[:end]))
            if line is not None:
                return line
        return None

    def problem(self, loc: Loc, message: str) -> Problem:
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
    return parse_toml(text, path)


def parse_toml(text: str, path: Path) -> TomlSource:
    """Parse TOML text as the file `path` (a file not written yet is checked like one on disk)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        line = int(match.group(1)) if match else None
        reason = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        raise InputError([Problem(str(path), line, "", f"invalid TOML: {reason}")]) from exc
    return TomlSource(path, data, locate_keys(text))
