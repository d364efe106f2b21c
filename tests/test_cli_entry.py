"""The lazy command table: every name resolves to its command, and --help lists them all."""

from __future__ import annotations

import gc
import importlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest

from cockpit.cli.guided import unknown_command
from cockpit.cli.main import COMMAND_HELP, COMMAND_MODULES, OPENS_TUI, cli
from cockpit.startup import pause_collector
from tests.cli_runner import run_cockpit


def test_every_command_name_resolves_to_its_module() -> None:
    for name, module_name in COMMAND_MODULES.items():
        module = importlib.import_module(f"cockpit.cli.{module_name}")
        assert [c.name for c in module.COMMANDS].count(name) == 1, name
    every = {
        c.name
        for m in set(COMMAND_MODULES.values())
        for c in importlib.import_module(f"cockpit.cli.{m}").COMMANDS
    }
    assert every == set(COMMAND_MODULES), "a module exports a command the table does not list"


def test_the_help_lists_each_command_by_its_own_short_help_and_imports_none() -> None:
    for name, module_name in COMMAND_MODULES.items():
        module = importlib.import_module(f"cockpit.cli.{module_name}")
        command = next(c for c in module.COMMANDS if c.name == name)
        assert COMMAND_HELP[name] == command.get_short_help_str(limit=1000), name
    listed = subprocess.run(
        [sys.executable, "-c", "import sys\nfrom cockpit.cli.main import cli\n"
         "try:\n    cli(['--help'])\nexcept SystemExit:\n    pass\n"
         "print(sorted(m for m in sys.modules if m.startswith('cockpit.cli.')"
         " or m in ('asyncssh', 'textual', 'httpx')))"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert listed.stdout.splitlines()[-1] == str(
        sorted(["cockpit.cli.completion", "cockpit.cli.guided", "cockpit.cli.main"])
    )


LIGHT = (
    "lanes",
    "validate",
    "render",
    "fit",
    "report",
    "history",
    "recipe",
    "import",
    "completion",
)
"""The commands that read files only: none may pay asyncssh's import (issue 18: `report show`
took a second importing it through `bench.remote`), nor Textual's."""


@pytest.mark.parametrize("name", LIGHT)
def test_a_light_command_imports_neither_asyncssh_nor_textual(name: str) -> None:
    module = f"cockpit.cli.{COMMAND_MODULES[name]}"
    loaded = subprocess.run(
        [sys.executable, "-c", f"import sys, {module}\n"
         "print(sorted(m for m in ('asyncssh', 'textual') if m in sys.modules))"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert loaded.stdout.strip() == "[]"


def test_help_lists_every_command_and_version_works() -> None:
    result = run_cockpit("--help")
    assert result.returncode == 0
    for name in COMMAND_MODULES:
        assert f"  {name} " in result.stdout
    version = run_cockpit("--version")
    assert version.returncode == 0
    assert re.fullmatch(r"cockpit, version \S+ \(commit [0-9a-f]{12}(-dirty)?\)\n", version.stdout)


@pytest.mark.parametrize(
    ("typed", "line"),
    [
        (["statsu"], "error: no command 'statsu'; did you mean 'status'?"),
        (["launhc", "-r", "x"], "error: no command 'launhc'; did you mean 'launch'?"),
        (
            ["report", "shwo", "x.json"],
            "error: no command 'report shwo'; did you mean 'report show'?",
        ),
        (["sim", "upp"], "error: no command 'sim upp'; did you mean 'sim up'?"),
    ],
)
def test_a_mistyped_command_gets_one_line_naming_the_nearest(typed: list[str], line: str) -> None:
    result = run_cockpit(*typed)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [line] and result.stdout == ""


def test_a_command_nothing_resembles_lists_the_commands() -> None:
    assert unknown_command("xyzzy", ["lanes", "status"]) == (
        "no command 'xyzzy' (commands: lanes, status)"
    )
    assert unknown_command("compre", ["compare", "show"], "report") == (
        "no command 'report compre'; did you mean 'report compare'?"
    )


@pytest.mark.usefixtures("collector_paused")
def test_a_loaded_command_resumes_the_collector_the_tui_keeps_it_paused() -> None:
    ctx = click.Context(cli)
    for name in COMMAND_MODULES:
        pause_collector()  # as main() does
        assert cli.get_command(ctx, name) is not None
        # the TUI commands resume it once their first frame is painted (test_startup)
        assert gc.isenabled() is (name not in OPENS_TUI), name


def test_ctrl_c_in_a_command_that_is_not_an_operation_exits_130(tmp_path: Path) -> None:
    """click turns a KeyboardInterrupt into Abort, which exited 1 (a failure on the nodes)."""
    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    proc = subprocess.Popen(
        [sys.executable, "-m", "cockpit", "report", "show", str(fifo)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while True:  # the write end opens once the command opened the read end: it blocks reading
        try:
            writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError:
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
    try:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        os.close(writer)
    assert proc.returncode == 130, err
