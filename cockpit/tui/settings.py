"""The TUI's user settings (theme, keymap overrides) in `tui.toml` under the user config dir.

Kept apart from the inventory's `config.toml` so saving the theme never rewrites a file the
operator edits by hand. Saving edits the document with tomlkit, which keeps the operator's
comments, key order and layout, sets only the top-level `theme` (a `theme` binding in [keymap]
is another key), and replaces the file atomically (`cockpit.atomic`): a crash mid-save leaves the
previous file, never an empty one.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from cockpit.atomic import write_atomic
from cockpit.errors import InputError

SETTINGS_FILE = "tui.toml"


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


def with_theme(text: str, theme: str) -> str:
    """`text` (a tui.toml) with its top-level `theme` set, everything else as it was."""
    import tomlkit  # here: the TUI's start-up never pays for it
    from tomlkit.exceptions import ParseError

    try:
        document = tomlkit.parse(text)
    except ParseError as exc:
        raise InputError(f"invalid TOML ({exc}): fix it, the theme was not saved") from None
    document["theme"] = theme
    return tomlkit.dumps(document)


def save_theme(path: Path, theme: str) -> None:
    """Persist the theme choice; the rest of the file stays as the operator wrote it."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    try:
        write_atomic(path, with_theme(text, theme))
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None
