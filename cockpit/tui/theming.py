"""Themes from `themes/*.toml` (Textual `Theme` fields), registered at start-up."""

from __future__ import annotations

import tomllib
from dataclasses import fields
from pathlib import Path

from textual.theme import Theme

from cockpit.assets import asset_dir
from cockpit.errors import InputError

THEMES_DIR = asset_dir("themes")
DEFAULT_THEME = "cockpit-dark"
_FIELDS = {f.name for f in fields(Theme)}


def load_theme(path: Path) -> Theme:
    """One theme file: `name`, `primary` and any other `Theme` field; unknown keys refused."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: {exc}") from None
    unknown = set(data) - _FIELDS
    if unknown:
        raise InputError(f"{path}: unknown theme key(s) {', '.join(sorted(unknown))}")
    if "name" not in data or "primary" not in data:
        raise InputError(f"{path}: a theme needs `name` and `primary`")
    return Theme(**data)


def load_themes(*folders: Path) -> list[Theme]:
    """Every `*.toml` theme in the folders, in name order (later folders may redefine a name)."""
    themes: dict[str, Theme] = {}
    for folder in folders:
        if folder.is_dir():
            for path in sorted(folder.glob("*.toml")):
                theme = load_theme(path)
                themes[theme.name] = theme
    return list(themes.values())
