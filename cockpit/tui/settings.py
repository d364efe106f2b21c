"""The TUI's user settings (theme, keymap overrides) in `tui.toml` under the user config dir.

Kept apart from the inventory's `config.toml` so saving the theme never rewrites a file the
operator edits by hand. Saving replaces only the `theme = ...` line, comments and keymap stay.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from cockpit.errors import InputError

SETTINGS_FILE = "tui.toml"
_THEME_LINE = re.compile(r"^theme\s*=.*$", re.MULTILINE)


def default_settings_path() -> Path:
    return Path(platformdirs.user_config_dir("cockpit")) / SETTINGS_FILE


@dataclass(frozen=True)
class TuiSettings:
    path: Path
    theme: str | None = None
    keymap: dict[str, str] = field(default_factory=dict)  # binding id → keys ("ctrl+l,f2")


def load_settings(path: Path) -> TuiSettings:
    """Read `tui.toml`; a missing file means defaults, a broken one is an input error."""
    if not path.is_file():
        return TuiSettings(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: {exc}") from None
    theme = data.get("theme")
    keymap = data.get("keymap", {})
    if not isinstance(keymap, dict) or not all(isinstance(v, str) for v in keymap.values()):
        raise InputError(
            f'{path}: [keymap] maps binding ids to key strings, e.g. launch = "ctrl+l"'
        )
    return TuiSettings(path, theme if isinstance(theme, str) else None, dict(keymap))


def save_theme(path: Path, theme: str) -> None:
    """Persist the theme choice, keeping every other line of the file as it is."""
    line = f"theme = {theme!r}".replace("'", '"')
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    found = _THEME_LINE.search(text)
    text = _THEME_LINE.sub(line, text, count=1) if found else f"{line}\n{text}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
