"""A fuzz run of hostile or broken input (issue 31): generated values for every numeric option of
every command, hostile names for every option that names a recipe, cluster, lane or endpoint,
a hostile value in every field of the inventory and its recipes, and hostile `--since` moments
(280 inputs, about 15 s).

Each is held to the same contract: stderr is one line (a broken inventory: one line per problem,
each naming its file), the exit code is 2, there is no traceback, and no SSH connection is opened
(so nothing starts on a node). hypothesis draws them derandomized, so a CI run is the same run;
the runs are in process (tests/cli_runner.run_main), a few milliseconds each.
"""

from __future__ import annotations

import importlib
import math
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
import tomlkit
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from cockpit.cli.bounds import Bounded
from cockpit.cli.main import COMMAND_MODULES
from tests.cli_runner import RECIPES, assert_refused, run_main

pytestmark = pytest.mark.usefixtures("no_ssh_fuzz")

FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
RECIPE, CLUSTER = "qwen3-0.6b-2x", "2nodes-dac"


@pytest.fixture
def no_ssh_fuzz(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Any SSH connection fails the test: every input here must be refused before one."""
    import asyncssh

    async def refuse(host: str, *args: object, **kwargs: object) -> None:
        pytest.fail(f"an SSH connection was opened (to {host}) for input that must be refused")

    monkeypatch.setattr(asyncssh, "connect", refuse)
    yield


def _leaves(
    command: click.Command, path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from _leaves(sub, (*path, name))
    else:
        yield path, command


def every_command() -> list[tuple[tuple[str, ...], click.Command]]:
    """Every command a user can type, subcommands of the groups included."""
    found = []
    for name, module_name in sorted(COMMAND_MODULES.items()):
        module = importlib.import_module(f"cockpit.cli.{module_name}")
        found += _leaves(next(c for c in module.COMMANDS if c.name == name), (name,))
    return found


BY_RULE = {"_plan_field", "_depths"}
"""Callbacks that read a number (the sweep plan's fields: `4K`, comma lists) from a string."""


def is_numeric(option: click.Option) -> bool:
    number_types = (click.types._NumberParamTypeBase, Bounded)
    callback = getattr(option.callback, "__name__", "")
    return isinstance(option.type, number_types) or callback in BY_RULE


NUMERIC = [
    (path, option)
    for path, command in every_command()
    for option in command.params
    if isinstance(option, click.Option) and is_numeric(option)
]


def test_every_numeric_option_has_a_range() -> None:
    """A bare int or float (negative, NaN and infinity accepted) is nowhere left, nor click's
    FloatRange (it lets NaN through: every comparison with NaN is false)."""
    bare = [
        f"{' '.join(path)} {option.opts[0]}"
        for path, option in NUMERIC
        if (
            type(option.type) in (click.types.IntParamType, click.types.FloatParamType)
            or isinstance(option.type, click.FloatRange)
        )
        and getattr(option.callback, "__name__", "") not in BY_RULE
    ]
    assert bare == []
    assert len(NUMERIC) >= 20, NUMERIC  # the introspection found the options


REQUIRED = {
    "bench": ("--label", "x", "--recipe", RECIPE, "--cluster", CLUSTER),
    "probe": ("--recipe", RECIPE, "--cluster", CLUSTER),
    "launch": ("--recipe", RECIPE, "--cluster", CLUSTER),
    "switch": ("--recipe", RECIPE, "--cluster", CLUSTER, "--yes"),
    "logs": ("--lane", RECIPE),
    "report trend": ("--lane", RECIPE),
}
"""Valid values of the other options each command needs, given after the fuzzed one."""


def _long(option: click.Option) -> str:
    return max(option.opts, key=len)


def _accepts(path: tuple[str, ...], option: click.Option, value: str) -> bool:
    """Whether the option's own type and callback take `value` (those are drawn again)."""
    command = dict(every_command())[path]
    try:
        option.process_value(click.Context(command), value)
    except click.BadParameter:
        return False
    return True


NUMBER_WORDS = st.one_of(
    st.sampled_from(["nan", "NaN", "-nan", "inf", "+inf", "-inf", "Infinity", "1e309", "-0"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-(10**12), 10**12).map(str),
    st.text(max_size=12).filter(lambda t: "\x00" not in t),
)


@settings(FUZZ, max_examples=80)
@given(data=st.data())
def test_fuzz_numeric_options(data: st.DataObject, capsys: pytest.CaptureFixture[str]) -> None:
    path, option = data.draw(st.sampled_from(NUMERIC), label="option")
    value = data.draw(NUMBER_WORDS, label="value")
    assume(not _accepts(path, option, value))
    ran = run_main("--inventory", RECIPES, *path, f"{_long(option)}={value}",
                   *REQUIRED.get(" ".join(path), ()), capsys=capsys)  # fmt: skip
    assert_refused(ran, _long(option))


NAMED = [
    (("launch",), "--recipe", ("--cluster", CLUSTER)),
    (("launch",), "--cluster", ("--recipe", RECIPE)),
    (("switch",), "--recipe", ("--cluster", CLUSTER, "--yes")),
    (("switch",), "--cluster", ("--recipe", RECIPE, "--yes")),
    (("sync-image",), "--recipe", ("--cluster", CLUSTER)),
    (("sync-image",), "--cluster", ("--recipe", RECIPE)),
    (("sync-model",), "--recipe", ("--cluster", CLUSTER)),
    (("sync-model",), "--cluster", ("--recipe", RECIPE)),
    (("stop",), "--lane", ()),
    (("stop",), "--cluster", ()),
    (("fit",), "--recipe", ()),
    (("fit",), "--cluster", ("--recipe", RECIPE)),
    (("render",), "--recipe", ()),
    (("render",), "--cluster", ("--recipe", RECIPE)),
    (("logs",), "--lane", ()),
    (("logs",), "--cluster", ("--lane", RECIPE)),
    (("status",), "--cluster", ()),
    (("bench",), "--recipe", ("--cluster", CLUSTER, "--label", "x")),
    (("bench",), "--cluster", ("--recipe", RECIPE, "--label", "x")),
    (("bench",), "--endpoint", ("--label", "x", "--tokenizer", ".")),
    (("probe",), "--recipe", ("--cluster", CLUSTER)),
    (("probe",), "--cluster", ("--recipe", RECIPE)),
    (("probe",), "--endpoint", ()),
    (("bench",), "--bench-host", ("--recipe", RECIPE, "--cluster", CLUSTER, "--label", "x")),
    (("sync-image",), "--from", ("--recipe", RECIPE, "--cluster", CLUSTER)),
    (("sync-model",), "--from", ("--recipe", RECIPE, "--cluster", CLUSTER)),
]
"""Every option that names a recipe, a cluster, a lane or an endpoint, with what else it needs."""

HOSTILE = st.one_of(
    st.sampled_from([
        "", " ", "nope", "$(touch /tmp/cockpit-fuzz)", "`id`", "; rm -rf /", "../../etc/passwd",
        f"{RECIPE}\n", f" {CLUSTER}", "\x1b[31mred", "a" * 5000, "dgx1", "--help", "-", "*",
        "file:///etc/passwd", "http://", "http://127.0.0.1:99999", "ftp://127.0.0.1/",
    ]),
    st.text(max_size=64).filter(lambda t: "\x00" not in t),
)  # fmt: skip


@settings(FUZZ, max_examples=90)
@given(target=st.sampled_from(NAMED), value=HOSTILE)
def test_fuzz_names(
    target: tuple[tuple[str, ...], str, tuple[str, ...]],
    value: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path, option, others = target
    assume(value not in (RECIPE, CLUSTER))
    assume(not (option in ("--bench-host", "--from") and re.fullmatch(r"local|dgx[1-8]", value)))
    ran = run_main("--inventory", RECIPES, *path, f"{option}={value}", *others, capsys=capsys)
    assert_refused(ran)


def _fields(document: object, at: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """The location of every value in a TOML document, tables and arrays walked into."""
    if isinstance(document, dict):
        for key, value in document.items():
            yield from _fields(value, (*at, key))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            yield from _fields(value, (*at, index))
    if at:
        yield at


FILES = sorted(p.name for p in RECIPES.glob("*.toml"))
FIELDS = [
    (name, loc)
    for name in FILES
    for loc in _fields(tomlkit.parse((RECIPES / name).read_text()).unwrap())
]
HOSTILE_VALUES = st.one_of(
    st.sampled_from([
        -1, 0, 2**63, -(2**63), math.nan, math.inf, -math.inf, 1e308, 0.5, True, "", " ",
        "\x1b[31m", "a\nb", "$(touch /tmp/cockpit-fuzz)", "../../../etc/passwd", "x" * 5000,
        [], [1, "a"], {}, {"unknown": 1},
    ]),
    st.text(max_size=40).filter(lambda t: "\x00" not in t),
    st.integers(),
)  # fmt: skip


def _set(document: dict, loc: tuple[str | int, ...], value: object) -> None:
    parent = document
    for part in loc[:-1]:
        parent = parent[part]
    parent[loc[-1]] = value


@pytest.fixture
def inventory_copy(tmp_path: Path) -> Path:
    root = tmp_path / "inventory"
    shutil.copytree(RECIPES, root)
    return root


@settings(FUZZ, max_examples=70)
@given(field=st.sampled_from(FIELDS), value=HOSTILE_VALUES)
def test_fuzz_inventory_and_recipe_fields(
    field: tuple[str, tuple[str | int, ...]],
    value: object,
    inventory_copy: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """validate lists the problems (one line each, naming the file) or passes; render then
    works or refuses: never a traceback, never a node asked."""
    name, loc = field
    path = inventory_copy / name
    original = (RECIPES / name).read_text()
    document = tomlkit.parse(original).unwrap()
    _set(document, loc, value)
    path.write_text(tomlkit.dumps(document))
    try:
        checked = run_main("--inventory", inventory_copy, "validate", capsys=capsys)
        assert "Traceback" not in checked.stderr + checked.stdout, checked
        assert checked.code in (0, 2), checked
        problems = checked.stderr.splitlines()
        if checked.code == 2:
            assert problems[-1].endswith(f"problem(s) in {inventory_copy}"), problems
            assert all(line.startswith("error: ") for line in problems[:-1]), problems
            assert any(str(inventory_copy) in line for line in problems[:-1]), problems
        rendered = run_main("--inventory", inventory_copy, "render", "--recipe", RECIPE,
                            capsys=capsys)  # fmt: skip
        assert "Traceback" not in rendered.stderr + rendered.stdout, rendered
        assert rendered.code in (0, 2), rendered
        if rendered.code == 2:
            assert any(line.startswith("error: ") for line in rendered.stderr.splitlines())
    finally:
        path.write_text(original)


SINCE = st.one_of(
    st.sampled_from([
        "0001-01-01", "9999-12-31T23:59:59", "-1h", "1e9h", "nan", "inf", "9" * 400 + "d",
        "2026-02-30", "2026-12-04T25:00Z", "1h30", "", " ", "\x1b[2J",
    ]),
    st.text(max_size=24).filter(lambda t: "\x00" not in t),
)  # fmt: skip


@settings(FUZZ, max_examples=40)
@given(command=st.sampled_from(["ops", "boots", "benches"]), since=SINCE)
@example(command="ops", since="0001-01-01")  # was a ValueError traceback
def test_fuzz_history_since(
    command: str,
    since: str,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A moment to read the history from: a table (of nothing) or one line, exit 2."""
    monkeypatch.setenv("COCKPIT_STATE_DIR", str(tmp_path_factory.mktemp("state")))
    ran = run_main("history", command, f"--since={since}", capsys=capsys)
    if ran.code != 0:
        assert_refused(ran, "--since")
