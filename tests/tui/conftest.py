"""Apps for the TUI tests: the recorded scene at a fixed clock, settings in a temporary folder;
processes (`cockpit serve`, a browser) each in a session of its own, killed with their children."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cockpit.tui.app import CockpitApp
from cockpit.tui.settings import TuiSettings
from tests.tui import scene
from tests.tui.served import kill_group, start_in_session


@pytest.fixture
def make_app(tmp_path: Path) -> Callable[..., CockpitApp]:
    """`make_app(theme=..., readonly=..., with_scene=True, **app_kwargs)`."""

    def build(
        *,
        theme: str | None = None,
        with_scene: bool = True,
        keymap: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> CockpitApp:
        inv = scene.inventory()
        settings = TuiSettings(tmp_path / "tui.toml", theme, keymap or {})
        kwargs.setdefault("clock", lambda: scene.T0)
        kwargs.setdefault("fleet_label", "recorded scene")
        app = CockpitApp(inv, settings=settings, baselines=scene.baselines(), **kwargs)
        if with_scene:
            app.store.apply_all(scene.scene(inv))
        return app

    return build


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """`processes(name, *argv)` starts one in a session of its own with this test's config,
    state and home folders, output in `tmp_path/<name>.log`; teardown kills each group."""
    started: list[subprocess.Popen[bytes]] = []
    env = {
        **os.environ,
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "COCKPIT_STATE_DIR": str(tmp_path / "state"),
        "HOME": str(tmp_path / "home"),
    }
    env.pop("COCKPIT_INVENTORY", None)

    def start(name: str, *argv: str) -> subprocess.Popen[bytes]:
        started.append(start_in_session(tmp_path / f"{name}.log", list(argv), env))
        return started[-1]

    yield start
    for proc in reversed(started):
        kill_group(proc)
