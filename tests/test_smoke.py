"""The smoke set on the installed (locked) dependencies: a new user's first commands print only
the cockpit's own lines. `.ci/newest` runs the same set on the newest versions the ranges allow."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.smoke import FOREIGN, smoke


@pytest.mark.slow
def test_a_new_users_first_commands_print_only_the_cockpits_lines(tmp_path: Path) -> None:
    cockpit = str(Path(sys.executable).with_name("cockpit"))
    assert list(smoke(cockpit, tmp_path, every_help=False)) == []


@pytest.mark.parametrize(
    "line",
    [
        "/x/site-packages/asyncssh/crypto/misc.py:32: CryptographyDeprecationWarning: DSA is",
        "Traceback (most recent call last):",
        '  File "/x/cockpit/cli/main.py", line 197, in main',
    ],
)
def test_what_only_a_dependency_prints_is_told_from_the_cockpits_lines(line: str) -> None:
    assert FOREIGN.search(f"nodes\n{line}\n")


@pytest.mark.parametrize(
    "line",
    ["error: no command 'statsu'; did you mean 'status'?", "dgx1  up  GB10  41 °C  12 W"],
)
def test_the_cockpits_own_lines_pass(line: str) -> None:
    assert not FOREIGN.search(f"{line}\n")
