"""Run the real `cockpit` CLI: in a subprocess as an operator would, or in this process through
its console-script entry (`run_main`)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

RECIPES = Path(__file__).parents[1] / "recipes"
"""The project's own inventory (its clusters and recipes)."""


def run_cockpit(*args: str | Path, env: dict[str, str] | None = None, timeout: float = 60):
    """`python -m cockpit ARGS`; returns the CompletedProcess (text mode)."""
    full_env = {**os.environ, "COLUMNS": "200", **(env or {})}
    full_env.pop(
        "COCKPIT_INVENTORY", None
    ) if env is None or "COCKPIT_INVENTORY" not in env else None
    return subprocess.run(
        [sys.executable, "-m", "cockpit", *map(str, args)],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
    )


@dataclass(frozen=True)
class Ran:
    """What one in-process `cockpit` run left: its exit code and its two streams."""

    code: int
    stdout: str
    stderr: str


def run_main(*args: str | Path, capsys: pytest.CaptureFixture[str]) -> Ran:
    """`cockpit ARGS` through the console script's own entry (`main`: its error lines and exit
    codes) in this process: a refusal costs no interpreter start, so a test can try hundreds."""
    from cockpit.cli.main import main

    capsys.readouterr()
    saved = sys.argv
    sys.argv = ["cockpit", *map(str, args)]
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = saved
        gc.enable()  # main() pauses the collector until a command is loaded (cockpit.startup)
        gc.unfreeze()
    out, err = capsys.readouterr()
    return Ran(code, out, err)


def assert_refused(ran: Ran, *words: str, code: int = 2) -> None:
    """One line on stderr naming `words`, nothing on stdout, `code`, no traceback."""
    assert "Traceback" not in ran.stderr + ran.stdout, ran.stderr
    lines = ran.stderr.splitlines()
    assert (ran.code, len(lines), ran.stdout) == (code, 1, ""), (ran, lines)
    for word in words:
        assert word in lines[0], (word, lines[0])
