"""Settings file (theme persisted, keymap overrides) and the theme files."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.errors import InputError
from cockpit.tui.settings import load_settings, save_theme
from cockpit.tui.theming import THEMES_DIR, load_themes


def test_saving_the_theme_keeps_every_other_line(tmp_path: Path) -> None:
    path = tmp_path / "tui.toml"
    path.write_text('# my keys\n[keymap]\nlaunch = "ctrl+l"\n')
    save_theme(path, "cockpit-light")
    save_theme(path, "cockpit-high-contrast")
    text = path.read_text()
    assert text.count("theme =") == 1 and "# my keys" in text
    settings = load_settings(path)
    assert settings.theme == "cockpit-high-contrast" and settings.keymap == {"launch": "ctrl+l"}


def test_missing_file_means_defaults_and_a_bad_keymap_is_refused(tmp_path: Path) -> None:
    assert load_settings(tmp_path / "none.toml").theme is None
    bad = tmp_path / "tui.toml"
    bad.write_text("[keymap]\nlaunch = 3\n")
    with pytest.raises(InputError, match="keymap"):
        load_settings(bad)


def test_the_three_shipped_themes_load(tmp_path: Path) -> None:
    names = {t.name for t in load_themes(THEMES_DIR)}
    assert names == {"cockpit-dark", "cockpit-light", "cockpit-high-contrast"}
    (tmp_path / "x.toml").write_text('name = "x"\nprimary = "#fff"\ncolour = "#000"\n')
    with pytest.raises(InputError, match="unknown theme key"):
        load_themes(tmp_path)
