"""The history's settings, `[history]` in the user's `config.toml` (`cockpit.settings`).

That file (`~/.config/cockpit/config.toml`, `cockpit.paths.user_config_file`) is the cockpit's own
settings file, read by the CLI and the TUI alike (its `inventory` key names the inventory); the
TUI-only `tui.toml` would leave `cockpit launch` without the setting. The whole file is checked,
key by key like the inventory (a misspelt key is one line naming the right one).
"""

from __future__ import annotations

from pathlib import Path

from cockpit.settings import HistoryTable, user_config


def history_table(path: Path | None = None) -> HistoryTable:
    """The `[history]` table (its defaults without a file); a broken file is an input error
    naming file, line and field."""
    return user_config(path).history


def retention_days(path: Path | None = None) -> float | None:
    """Days of history to keep (None: keep everything)."""
    return history_table(path).retention_days or None
