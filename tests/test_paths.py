"""The cockpit's own files stay where they were before `cockpit.paths` gathered them: the XDG
folders of the account (platformdirs on Linux), the state folder overridable."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit import paths
from cockpit.bench.tokenizer import cache_dir
from cockpit.config import load_inventory, resolve_inventory_dir
from cockpit.config.inventory import PROJECT_RECIPES
from cockpit.ops.history import BootHistory
from cockpit.plan import plan_lane

XDG = ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "COCKPIT_STATE_DIR")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An account with no XDG variables set: the folders platformdirs derives from HOME."""
    for name in (*XDG, "COCKPIT_INVENTORY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def test_the_folders_under_home(home: Path) -> None:
    assert paths.user_config_file() == home / ".config" / "cockpit" / "config.toml"
    assert paths.tui_settings_file() == home / ".config" / "cockpit" / "tui.toml"
    assert BootHistory.default().path == home / ".local" / "state" / "cockpit" / "boot-history.json"
    assert paths.tokenizer_cache_dir() == home / ".cache" / "cockpit" / "tokenizers"


def test_the_xdg_variables_and_the_state_override_are_honoured(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in XDG[:3]:
        monkeypatch.setenv(name, str(home / name.lower()))
    assert paths.tui_settings_file() == home / "xdg_config_home" / "cockpit" / "tui.toml"
    assert paths.state_dir() == home / "xdg_state_home" / "cockpit"
    assert paths.cache_dir() == home / "xdg_cache_home" / "cockpit"
    monkeypatch.setenv("COCKPIT_STATE_DIR", str(home / "run-state"))
    assert BootHistory.default().path == home / "run-state" / "boot-history.json"


def test_the_users_read_their_files_there(home: Path) -> None:
    """The inventory named in `config.toml` is the one used; the tokenizer cache is per model."""
    config = home / ".config" / "cockpit" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'inventory = "{home / "inv"}"\n')
    assert resolve_inventory_dir(None) == home / "inv"
    inventory = load_inventory(PROJECT_RECIPES)
    recipe = next(iter(inventory.recipes.values()))
    plan = plan_lane(inventory, recipe, inventory.cluster(recipe.lane.clusters[0]))
    assert cache_dir(plan).parent == home / ".cache" / "cockpit" / "tokenizers"
