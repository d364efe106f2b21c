"""The history's one setting, `[history] retention_days` in the user's `config.toml`.

That file (`~/.config/cockpit/config.toml`, `cockpit.paths.user_config_file`) is the cockpit's own
settings file, read by the CLI and the TUI alike (its `inventory` key names the inventory); the
TUI-only `tui.toml` would leave `cockpit launch` without the setting. Only the `[history]` table
is checked here, key by key like the inventory (a misspelt key is one line naming the right one).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cockpit.config.models import Strict
from cockpit.config.problems import pydantic_problems
from cockpit.config.toml_source import read_toml
from cockpit.errors import InputError
from cockpit.paths import user_config_file

DEFAULT_RETENTION_DAYS = 30.0


class HistoryTable(Strict):
    """`[history]`: rows older than `retention_days` are pruned (0 keeps everything); `source`
    is where the TUI's `h` reads the past: `store` (this machine's) or `prometheus:URL` (a
    team's Prometheus that scrapes `cockpit exporter`)."""

    retention_days: float = Field(default=DEFAULT_RETENTION_DAYS, ge=0, strict=True)
    source: str = Field(default="store", pattern=r"^(store|prometheus:https?://[^\s]+)$")


class UserConfig(BaseModel):
    """The file's other keys are other settings' business."""

    model_config = ConfigDict(extra="allow", frozen=True)
    history: HistoryTable = HistoryTable()


def history_table(path: Path | None = None) -> HistoryTable:
    """The `[history]` table (its defaults without a file); a broken one is an input error
    naming file, line and field."""
    path = path or user_config_file()
    if not path.is_file():
        return HistoryTable()
    src = read_toml(path)
    try:
        return UserConfig.model_validate(src.data).history
    except ValidationError as exc:
        raise InputError(pydantic_problems(src, UserConfig, exc)) from None


def retention_days(path: Path | None = None) -> float | None:
    """Days of history to keep (None: keep everything)."""
    return history_table(path).retention_days or None
