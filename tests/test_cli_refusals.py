"""Refuse before acting: a bad value of any option is one line naming it, exit 2, and no SSH
connection is opened (issue 31)."""

from __future__ import annotations

from collections.abc import Iterator

import asyncssh
import pytest

from tests.cli_runner import Ran, run_main

LANE = ("--recipe", "qwen3-0.6b-2x", "--cluster", "2nodes-dac")
SHORT_LANE = ("-r", "qwen3-0.6b-2x", "-c", "2nodes-dac")


@pytest.fixture
def no_ssh(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every SSH connection a command tries, refused and listed (a refusal must open none)."""
    tried: list[str] = []

    async def refuse(host: str, *args: object, **kwargs: object) -> None:
        tried.append(host)
        raise OSError(f"this test opens no SSH connection (tried {host})")

    monkeypatch.setattr(asyncssh, "connect", refuse)
    yield tried


def assert_refused(ran: Ran, *words: str, code: int = 2) -> None:
    """One line on stderr naming `words`, nothing on stdout, `code`, no traceback."""
    assert "Traceback" not in ran.stderr + ran.stdout, ran.stderr
    lines = ran.stderr.splitlines()
    assert (ran.code, len(lines), ran.stdout) == (code, 1, ""), (ran, lines)
    for word in words:
        assert word in lines[0], (word, lines[0])


BAD_VALUES = [
    (("bench", *LANE, "--label", "x", "--hang-timeout", "-1"), "--hang-timeout"),
    (("bench", *LANE, "--label", "x", "--hang-timeout", "nan"), "--hang-timeout"),
    (("bench", *LANE, "--label", "x", "--hang-timeout", "0"), "--hang-timeout"),
    (("bench", *LANE, "--label", "x", "--hang-timeout", "inf"), "--hang-timeout"),
    (("bench", *LANE, "--label", "x", "--time-scale", "nan"), "--time-scale"),
    (("bench", *LANE, "--label", "x", "--time-scale", "-inf"), "--time-scale"),
    (("bench", *LANE, "--label", "x", "--runs", "0"), "--runs"),
    (("probe", *LANE, "--tokens", "0"), "--tokens"),
    (("probe", *LANE, "--tokens", "-3"), "--tokens"),
    (("launch", *SHORT_LANE, "--boot-timeout", "-1"), "--boot-timeout"),
    (("launch", *SHORT_LANE, "--boot-timeout", "nan"), "--boot-timeout"),
    (("launch", *SHORT_LANE, "--stall-timeout", "0"), "--stall-timeout"),
    (("launch", *SHORT_LANE, "--ready-watch", "-0.5"), "--ready-watch"),
    (("launch", *SHORT_LANE, "--ready-watch", "inf"), "--ready-watch"),
    (("switch", *SHORT_LANE, "--yes", "--boot-timeout", "1e999"), "--boot-timeout"),
    (("switch", *SHORT_LANE, "--yes", "--stall-timeout", "-inf"), "--stall-timeout"),
    (("logs", "--lane", "qwen3-0.6b-2x", "--rank", "-1"), "--rank"),
    (("sim", "up", "--speed", "nan"), "--speed"),
    (("sim", "up", "--boot-speed", "inf"), "--boot-speed"),
    (("sim", "up", "--link-mbps", "-1"), "--link-mbps"),
]


@pytest.mark.parametrize(("args", "option"), BAD_VALUES)
def test_a_bad_number_is_refused_in_one_line_naming_its_option(
    args: tuple[str, ...], option: str, no_ssh: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert_refused(run_main(*args, capsys=capsys), option)
    assert no_ssh == []
