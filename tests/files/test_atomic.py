"""Atomic file replacement: a writer killed with SIGKILL at random moments never leaves a broken
file nor a temporary one behind (issue 19: an empty `tui.toml` 21 of 30 kills, 18 orphan temp
files of `boot-history.json` in 25)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from cockpit.atomic import leftovers, sweep, temp_name, write_atomic
from cockpit.errors import InputError
from cockpit.ops.history import BootHistory
from cockpit.tui.settings import load_settings, save_theme, with_theme

KILLS = 36
SETTINGS_TEXT = '# my keys\n[keymap]\nlaunch = "ctrl+l"  # mine\ntheme = "f5"\n'

# Saves the theme, records a boot and writes a report, round and round, until killed.
WRITER = """
import sys
from pathlib import Path
from cockpit.atomic import write_atomic
from cockpit.ops.history import BootHistory
from cockpit.tui.settings import save_theme

folder = Path(sys.argv[1])
history = BootHistory(folder / "state" / "boot-history.json")
report = "x" * 200_000
print("ready", flush=True)
n = 0
while True:
    n += 1
    save_theme(folder / "config" / "tui.toml", f"theme-{n}")
    history.record("lane", "cluster", float(n), float(n))
    write_atomic(folder / "reports" / "r.json", '{"n": %d, "pad": "%s"}' % (n, report))
"""


def _others(folder: Path, name: str) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != name)


def _check_whole(root: Path) -> None:
    settings = tomllib.loads((root / "config" / "tui.toml").read_text())
    assert settings["theme"].startswith("theme-"), settings
    assert settings["keymap"] == {"launch": "ctrl+l", "theme": "f5"}
    boots = json.loads((root / "state" / "boot-history.json").read_text())
    assert len(boots["lane@cluster"]) >= 1
    assert json.loads((root / "reports" / "r.json").read_text())["n"] >= 0  # 0: the first one


def test_a_writer_killed_at_random_moments_leaves_every_file_whole(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "tui.toml").write_text(SETTINGS_TEXT)
    save_theme(config / "tui.toml", "theme-0")
    BootHistory(tmp_path / "state" / "boot-history.json").record("lane", "cluster", 1.0, 1.0)
    write_atomic(tmp_path / "reports" / "r.json", '{"n": 0}')
    rng = random.Random(19)
    files = {"config": "tui.toml", "state": "boot-history.json", "reports": "r.json"}
    for _ in range(KILLS):
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True
        )
        assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
        time.sleep(rng.uniform(0.0, 0.05))
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        _check_whole(tmp_path)
        for folder, name in files.items():
            # at most the temporary file of the writer just killed: earlier ones were swept
            assert len(_others(tmp_path / folder, name)) <= 1, _others(tmp_path / folder, name)
    save_theme(config / "tui.toml", "theme-last")
    BootHistory(tmp_path / "state" / "boot-history.json").record("lane", "cluster", 1.0, 1.0)
    write_atomic(tmp_path / "reports" / "r.json", '{"n": 1}')
    _check_whole(tmp_path)
    for folder, name in files.items():
        assert _others(tmp_path / folder, name) == [], folder


def test_the_sweep_spares_a_live_writer_and_takes_old_or_dead_ones(tmp_path: Path) -> None:
    target = tmp_path / "f.json"
    mine = temp_name(target)
    mine.write_text("being written by this very process")
    dead = target.with_name(mine.name.replace(f".{os.getpid()}.", ".999999999."))
    dead.write_text("")
    foreign = target.with_name(f".f.json.otherhost.{os.getpid()}.abcd.tmp")
    foreign.write_text("")
    unrelated = tmp_path / ".f.json.swp"
    unrelated.write_text("")
    assert set(leftovers(target)) == {mine, dead, foreign}
    assert sweep(target) == [dead]
    day_old = time.time() - 2 * 24 * 3600
    os.utime(foreign, (day_old, day_old))
    assert sweep(target) == [foreign]
    assert mine.exists() and unrelated.exists()


def test_write_keeps_the_mode_and_replaces_a_symlinks_target(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "tui.toml"
    real.parent.mkdir()
    real.write_text("old")
    real.chmod(0o600)
    link = tmp_path / "tui.toml"
    link.symlink_to(real)
    write_atomic(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    assert real.stat().st_mode & 0o777 == 0o600


def test_the_theme_is_written_as_toml_keeping_comments_and_the_keymap(tmp_path: Path) -> None:
    text = with_theme(SETTINGS_TEXT, "cockpit-light")
    assert tomllib.loads(text) == {
        "theme": "cockpit-light",
        "keymap": {"launch": "ctrl+l", "theme": "f5"},  # the keymap's own `theme` binding stays
    }
    assert "# my keys" in text and "# mine" in text
    again = with_theme(text, 'a "quoted" \\ theme')
    assert tomllib.loads(again)["theme"] == 'a "quoted" \\ theme'
    assert again.count("theme =") == 2  # the top-level one replaced, not added


def test_a_settings_file_broken_meanwhile_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "tui.toml"
    path.write_text("[keymap\nlaunch = 'ctrl+l'\n")
    with pytest.raises(InputError, match="theme was not saved"):
        save_theme(path, "cockpit-light")
    assert path.read_text() == "[keymap\nlaunch = 'ctrl+l'\n"
    assert load_settings(tmp_path / "none.toml").theme is None
