"""`cockpit demo` as a newcomer meets it: the real command in a real terminal (tmux, 160×48), no
key pressed. Within 10 s of Enter the KV pane shows a usage figure, the Engine pane prompt and
generation rates, and the NCCL pane the serving lane's rank lines."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ALIVE_WITHIN_S = 10.0


class Terminal:
    """One tmux server of its own (a private socket), running one command at a fixed size."""

    def __init__(self, tmp: Path, command: str, size: tuple[int, int]) -> None:
        if shutil.which("tmux") is None:  # a real terminal is the point: never skipped
            pytest.fail("tmux is not installed (.ci/run installs it)")
        self.socket = str(tmp / "tmux.sock")
        width, height = size
        self._tmux("new-session", "-d", "-s", "t", "-x", str(width), "-y", str(height), command)

    def _tmux(self, *args: str) -> str:
        out = subprocess.run(["tmux", "-S", self.socket, *args], capture_output=True, text=True)
        return out.stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "t")

    def pane_pid(self) -> int | None:
        pid = self._tmux("display-message", "-p", "-t", "t", "#{pane_pid}").strip()
        return int(pid) if pid.isdigit() else None

    def close(self) -> None:
        self._tmux("kill-server")


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    env = {
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "COCKPIT_STATE_DIR": str(tmp_path / "state"),
        "TERM": "xterm-256color",
    }
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    python = shlex.quote(sys.executable)
    command = (  # the size is the terminal's: no COLUMNS/LINES from the test runner
        f"cd {shlex.quote(str(tmp_path))} && env -u COLUMNS -u LINES {exports} {python} -m cockpit demo"
    )
    term = Terminal(tmp_path, command, (160, 48))
    pid = term.pane_pid()
    try:
        yield term
    finally:
        term.close()  # SIGHUP: the demo's fleet stops with it (its owner pid)
        deadline = time.monotonic() + 15
        while pid is not None and time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)


def alive(screen: str) -> dict[str, bool]:
    """Which of the Done-when's figures the screen shows."""
    return {
        "kv usage": re.search(r"usage\s+\S*\s*\d+(\.\d+)?%", screen) is not None,
        "prompt tok/s": re.search(r"prompt\s+[1-9][\d.,]*\s*tok/s", screen) is not None,
        "generation tok/s": re.search(r"generation\s+[1-9][\d.,]*\s*tok/s", screen) is not None,
        "nccl ranks": all(f"rank {r}/2" in screen for r in (0, 1)),
    }


@pytest.mark.slow
@pytest.mark.timing  # alive within 10 s of wall time: a crowded machine moves that figure
def test_the_demo_is_alive_within_seconds_with_no_key_pressed(terminal: Terminal) -> None:
    started = time.monotonic()
    seen: dict[str, float] = {}
    screen = ""
    while time.monotonic() - started < ALIVE_WITHIN_S + 20:  # say how late, if it is
        screen = terminal.screen()
        for what, shown in alive(screen).items():
            if shown and what not in seen:
                seen[what] = time.monotonic() - started
        if len(seen) == 4:
            break
        time.sleep(0.2)
    print({k: f"{v:.1f}s" for k, v in seen.items()})
    assert len(seen) == 4, f"never shown: {set(alive(screen)) - set(seen)}\n{screen}"
    assert max(seen.values()) <= ALIVE_WITHIN_S, (seen, screen)
    assert "g Load" in screen  # the load is the newcomer's to stop
