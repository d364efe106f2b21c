"""Settings file (theme persisted, keymap overrides) and the theme files."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.errors import InputError
from cockpit.telemetry.slo import Slo
from cockpit.tui.settings import load_settings, save_theme
from cockpit.tui.theming import THEMES_DIR, load_themes
from tests.cli_runner import run_cockpit


def test_saving_the_theme_keeps_every_other_line(tmp_path: Path) -> None:
    path = tmp_path / "tui.toml"
    path.write_text('# my keys\n[keymap]\nlaunch = "ctrl+l"\n')
    save_theme(path, "cockpit-light")
    save_theme(path, "cockpit-high-contrast")
    text = path.read_text()
    assert text.count("theme =") == 1 and "# my keys" in text
    settings = load_settings(path)
    assert settings.theme == "cockpit-high-contrast" and settings.keymap == {"launch": "ctrl+l"}


def test_saving_the_theme_changes_the_theme_and_nothing_else(tmp_path: Path) -> None:
    """Other tables, comments (one naming a theme), a `theme` key binding and a value holding
    `theme = <name>` stay byte for byte; only the top-level value changes."""
    path = tmp_path / "tui.toml"
    rest = (
        "\n"
        "[keymap]\n"
        'theme = "ctrl+t"   # the key that cycles the theme\n'
        'launch = "ctrl+l"\n'
        'quit = "theme = cockpit-light"  # hostile: a value holding the line to replace\n'
        "\n"
        "[slo]\n"
        "ttft_ms = 1500 # theme = cockpit-light\n"
    )
    path.write_text(
        f'# theme = "cockpit-dark" was too dark\ntheme = "cockpit-light" # mine\n{rest}'
    )
    save_theme(path, "cockpit-high-contrast")
    assert path.read_text() == (
        f'# theme = "cockpit-dark" was too dark\ntheme = "cockpit-high-contrast" # mine\n{rest}'
    )
    settings = load_settings(path)
    assert settings.theme == "cockpit-high-contrast" and settings.keymap["theme"] == "ctrl+t"
    tables = rest[rest.index("[keymap]") :]
    path.write_text(tables)  # no top-level theme yet: it goes before the tables, they stay
    save_theme(path, "cockpit-dark")
    text = path.read_text()
    assert text.startswith('theme = "cockpit-dark"\n') and text.endswith(tables)
    assert load_settings(path).theme == "cockpit-dark"


def test_missing_file_means_defaults_and_a_bad_keymap_is_refused(tmp_path: Path) -> None:
    assert load_settings(tmp_path / "none.toml").theme is None
    bad = tmp_path / "tui.toml"
    bad.write_text("[keymap]\nlaunch = 3\n")
    with pytest.raises(InputError, match="keymap"):
        load_settings(bad)


def test_slos_are_read_in_milliseconds_and_default_to_bucket_bounds(tmp_path: Path) -> None:
    path = tmp_path / "tui.toml"
    assert load_settings(path).slo == Slo(ttft_s=2.5, tpot_s=0.1)
    path.write_text('theme = "cockpit-light"\n[slo]\nttft_ms = 1500\ntpot_ms = 75.5\n')
    assert load_settings(path).slo == Slo(ttft_s=1.5, tpot_s=0.0755)
    path.write_text("[slo]\ntpot_ms = 50\n")
    assert load_settings(path).slo == Slo(ttft_s=2.5, tpot_s=0.05)
    save_theme(path, "cockpit-dark")  # the theme's save keeps the table
    assert load_settings(path).slo.tpot_s == 0.05


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("[slo]\nttft_ms = 2000\ntpof_ms = 100\n",
         "3: slo.tpof_ms: unknown key 'tpof_ms' (did you mean 'tpot_ms'?)"),
        ('theme = "x"\n[sol]\nttft_ms = 2000\n', "2: sol: unknown key 'sol' (did you mean 'slo'?)"),
        ('[slo]\nttft_ms = "2000"\n', "2: slo.ttft_ms: Input should be a valid number"),
        ("[slo]\ntpot_ms = 0\n", "2: slo.tpot_ms: Input should be greater than 0"),
    ],
)  # fmt: skip
def test_a_mistake_in_the_settings_is_one_line_with_file_line_and_field(
    tmp_path: Path, text: str, line: str
) -> None:
    path = tmp_path / "tui.toml"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        load_settings(path)
    assert str(caught.value).startswith(f"{path}:{line}") and "\n" not in str(caught.value)


def test_the_tui_refuses_a_broken_settings_file_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "cockpit").mkdir()
    (tmp_path / "cockpit" / "tui.toml").write_text("[slo]\nttft = 2000\n")
    done = run_cockpit("tui", env={"XDG_CONFIG_HOME": str(tmp_path)})
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"error: {tmp_path}/cockpit/tui.toml:2: slo.ttft: unknown key 'ttft' "
        "(did you mean 'ttft_ms'?)"
    ]


def test_the_three_shipped_themes_load(tmp_path: Path) -> None:
    names = {t.name for t in load_themes(THEMES_DIR)}
    assert names == {"cockpit-dark", "cockpit-light", "cockpit-high-contrast"}
    (tmp_path / "x.toml").write_text('name = "x"\nprimary = "#fff"\ncolour = "#000"\n')
    with pytest.raises(InputError, match="unknown theme key"):
        load_themes(tmp_path)
