"""The operator's settings files (`cockpit.settings`): `config.toml` checked like the inventory
(one line with file, line and field, exit 2), and the `COCKPIT_*` variables over both files."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.config import resolve_inventory_dir
from cockpit.config.inventory import PROJECT_RECIPES
from cockpit.errors import InputError
from cockpit.settings import user_config
from cockpit.telemetry.slo import Slo
from cockpit.tui.settings import load_settings
from tests.cli_runner import run_cockpit


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An XDG config home with a `cockpit/` folder, and no COCKPIT_* setting variable."""
    for name in ("COCKPIT_INVENTORY", "COCKPIT_HISTORY", "COCKPIT_THEME", "COCKPIT_SLO"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    (tmp_path / "cockpit").mkdir()
    return tmp_path


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('inventroy = "/srv/inv"\n',
         "1: inventroy: unknown key 'inventroy' (did you mean 'inventory'?)"),
        ("inventory = 3\n", "1: inventory: Input should be a valid string (got 3)"),
        ('inventory = "/srv/inv"\n[history\n',
         "2: invalid TOML: Expected ']' at the end of a table declaration"),
        ('inventory = "/srv/inv"\n\n[history]\nretention_dayz = 7\n',
         "4: history.retention_dayz: unknown key 'retention_dayz' (did you mean 'retention_days'?)"),
    ],
)  # fmt: skip
def test_a_mistake_in_config_toml_refuses_a_command_in_one_line(
    config_home: Path, text: str, line: str
) -> None:
    config = config_home / "cockpit" / "config.toml"
    config.write_text(text)
    done = run_cockpit("lanes", env={"XDG_CONFIG_HOME": str(config_home)})
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"error: {config}:{line}"]


def test_the_variable_beats_the_file_and_the_option_beats_both(
    config_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = config_home / "cockpit" / "config.toml"
    config.write_text(f'inventory = "{config_home / "missing"}"\n')
    env = {"XDG_CONFIG_HOME": str(config_home)}
    assert run_cockpit("lanes", env=env).returncode == 2  # the file's folder has no inventory
    done = run_cockpit("lanes", env={**env, "COCKPIT_INVENTORY": str(PROJECT_RECIPES)})
    assert done.returncode == 0, done.stderr
    monkeypatch.setenv("COCKPIT_INVENTORY", str(PROJECT_RECIPES))
    assert user_config().inventory == str(PROJECT_RECIPES)
    assert resolve_inventory_dir(None) == PROJECT_RECIPES
    assert resolve_inventory_dir(Path("/srv/other")) == Path("/srv/other")
    monkeypatch.setenv("COCKPIT_INVENTORY", "")  # empty: as if unset
    assert resolve_inventory_dir(None) == config_home / "missing"
    config.unlink()
    assert resolve_inventory_dir(None) == PROJECT_RECIPES


def test_a_mistake_in_a_variable_names_the_variable(
    config_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COCKPIT_HISTORY", '{"retention_days": -1}')
    with pytest.raises(InputError) as caught:
        user_config()
    assert str(caught.value) == (
        "$COCKPIT_HISTORY: history.retention_days: Input should be greater than or equal to 0 "
        "(got -1)"
    )
    monkeypatch.setenv("COCKPIT_HISTORY", "retention_days=7")
    with pytest.raises(InputError, match=r"^\$COCKPIT_HISTORY: not JSON"):
        user_config()


def test_the_tui_settings_take_their_variables_over_the_file(
    config_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = config_home / "cockpit" / "tui.toml"
    path.write_text('theme = "cockpit-dark"\n[keymap]\nlaunch = "ctrl+l"\n[slo]\ntpot_ms = 50\n')
    monkeypatch.setenv("COCKPIT_THEME", "cockpit-light")
    monkeypatch.setenv("COCKPIT_SLO", '{"ttft_ms": 1500}')
    settings = load_settings(path)
    assert settings.theme == "cockpit-light" and settings.keymap == {"launch": "ctrl+l"}
    assert settings.slo == Slo(ttft_s=1.5, tpot_s=0.05)  # the table merged, key by key
    assert load_settings(config_home / "none.toml").theme == "cockpit-light"  # no file
    monkeypatch.setenv("COCKPIT_SLO", '{"tpof_ms": 10}')
    with pytest.raises(InputError) as caught:
        load_settings(path)
    assert str(caught.value) == (
        "$COCKPIT_SLO: slo.tpof_ms: unknown key 'tpof_ms' (did you mean 'tpot_ms'?)"
    )
