"""The key→line locator on hostile TOML: brackets, `=` and `#` inside strings of every form,
multi-line strings and arrays, inline tables, dotted and quoted keys, arrays of tables."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cockpit.config.toml_source import Loc, locate_keys, read_toml

HOSTILE = Path(__file__).resolve().parent.parent / "fixtures" / "config" / "hostile_strings.toml"


def _line(text: str, needle: str) -> int:
    (number,) = [n for n, line in enumerate(text.splitlines(), start=1) if needle in line]
    return number


def _paths(value: Any, loc: Loc = ()) -> Iterator[Loc]:
    """Every key and list element of parsed TOML, as pydantic would name it."""
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, child in items:
        yield (*loc, key)
        if isinstance(child, dict | list):
            yield from _paths(child, (*loc, key))


def test_a_bracket_in_a_string_does_not_hide_the_keys_after_it() -> None:
    """The confirmed bug: every key after this line, `[serve]` included, had lost its line."""
    text = 'why = "drop the [b12x block"\n\n[serve]\nport = 8000\n'
    assert locate_keys(text) == {("why",): 1, ("serve",): 3, ("serve", "port"): 4}


def test_every_key_of_the_hostile_file_is_at_its_line() -> None:
    text = HOSTILE.read_text()
    lines = locate_keys(text)
    expected = {
        ("why",): _line(text, "drop the [b12x"),
        ("lit",): _line(text, "lit = "),
        ("esc",): _line(text, "esc = "),
        ("ml2",): _line(text, "ml2 = "),
        ("quotes",): _line(text, "quotes = "),
        ("arr", 0): _line(text, '"a]"'),
        ("arr", 1, 1): _line(text, "[1, 2]"),
        ("arr", 2, "why"): _line(text, 'why = "c["'),
        ("dotted.key", "x y", "z"): _line(text, '"dotted.key"'),
        ("it", "b", "c"): _line(text, "it = {"),
        ("date",): _line(text, "date = "),
        ("serve",): _line(text, "[serve]"),
        ("serve", "port"): _line(text, "port = 8000"),
        ("fruits", 0, "physical", "color"): _line(text, 'color = "red"'),
        ("fruits", 0, "varieties", 0, "name"): _line(text, "red delicious"),
        ("fruits", 1, "name"): _line(text, "banana"),
        ("fruits", 1, "varieties", 0): _line(text, "plantain") - 1,
        ("fruits", 1, "varieties", 0, "name"): _line(text, "plantain"),
        ("quoted.table", "sub", "k"): _line(text, "k = 2"),
        ("quoted.table", "sub", "ab"): _line(text, '"a\\u0062"'),
    }
    assert {loc: lines.get(loc) for loc in expected} == expected
    assert ("not", "a", "table") not in lines and ("nope",) not in lines  # text of strings
    assert not [loc for loc in _paths(tomllib.loads(text)) if loc not in lines]


def test_an_implied_table_points_at_its_first_mention_and_a_written_header_wins() -> None:
    text = "[clusters.a.nccl]\nhcas = []\n\n[clusters.a]\nfabric = 1\n\n[nodes.b.x]\ny = 1\n"
    lines = locate_keys(text)
    assert lines[("clusters", "a")] == 4 and lines[("clusters",)] == 1
    assert lines[("nodes", "b")] == 7


def test_a_problem_after_a_hostile_string_names_its_own_line(tmp_path: Path) -> None:
    path = tmp_path / "recipe.toml"
    path.write_text('[lane]\nwhy = """\nnot [a table\n"""\nnote = "{"\n\n[serve]\nmax = "x"\n')
    problem = read_toml(path).problem(("serve", "max"), "not a number")
    assert (problem.line, problem.field) == (8, "serve.max")
