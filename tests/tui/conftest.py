"""Apps for the TUI tests: the recorded scene at a fixed clock, settings in a temporary folder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cockpit.tui.app import CockpitApp
from cockpit.tui.settings import TuiSettings
from tests.tui import scene


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
