"""Where the cockpit keeps its own files on the operator's machine: the one caller of platformdirs.

- config: `config.toml` (the inventory to use) and the TUI's `tui.toml`, files people edit;
- state: what the cockpit learns and keeps between runs (boot history), `$COCKPIT_STATE_DIR`
  overrides it (the tests and a second cockpit on one account use their own);
- cache: what can be fetched again (the lanes' tokenizers).
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP = "cockpit"


def config_dir() -> Path:
    return Path(platformdirs.user_config_dir(APP))


def state_dir() -> Path:
    override = os.environ.get("COCKPIT_STATE_DIR")
    return Path(override) if override else Path(platformdirs.user_state_dir(APP))


def cache_dir() -> Path:
    return Path(platformdirs.user_cache_dir(APP))


def user_config_file() -> Path:
    """`inventory = "…"`: the inventory when neither --inventory nor $COCKPIT_INVENTORY says."""
    return config_dir() / "config.toml"


def tui_settings_file() -> Path:
    """The TUI's theme, keymap overrides and SLOs (apart from `config.toml`, see tui.settings)."""
    return config_dir() / "tui.toml"


def boot_history_file() -> Path:
    return state_dir() / "boot-history.json"


def tokenizer_cache_dir() -> Path:
    return cache_dir() / "tokenizers"
