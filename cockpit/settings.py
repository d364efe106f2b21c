"""The operator's settings files, read one way: `config.toml` (the cockpit's own: the inventory
to use, the history's retention) and the TUI's `tui.toml` (its model is `tui.settings.TuiFile`).

Each file is a pydantic-settings model whose sources are, in order of precedence, the
environment (`COCKPIT_<FIELD>`, e.g. `COCKPIT_INVENTORY`, `COCKPIT_THEME`; a table as JSON) and
the file as `read_toml` parsed it, so every mistake is one line with file, line and field, like
the inventory's: an unknown key with the key it should be, a value of the wrong type, broken
TOML. A mistake in a variable names the variable. Where the files are is `cockpit.paths`.
"""

from __future__ import annotations

import re
from contextvars import ContextVar
from dataclasses import replace
from pathlib import Path
from typing import Any, Self

from pydantic import Field, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from cockpit import paths
from cockpit.config.models import Strict
from cockpit.config.problems import pydantic_problems
from cockpit.config.toml_source import TomlSource, read_toml
from cockpit.errors import InputError, Problem

ENV_PREFIX = "COCKPIT_"
DEFAULT_RETENTION_DAYS = 30.0

_reading: ContextVar[TomlSource | None] = ContextVar("cockpit_settings_file", default=None)


class TomlFileSource(PydanticBaseSettingsSource):
    """The settings file being loaded (`FileSettings.load`), as `read_toml` parsed it."""

    def __init__(self, settings_cls: type[BaseSettings], src: TomlSource | None) -> None:
        super().__init__(settings_cls)
        self.data = dict(src.data) if src is not None else {}

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self.data.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return self.data  # unknown keys too: the model refuses them with the name they should be


class FileSettings(BaseSettings):
    """Base of a settings file's model: strict keys, the environment over the file."""

    model_config = SettingsConfigDict(
        extra="forbid", frozen=True, env_prefix=ENV_PREFIX, env_ignore_empty=True
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Arguments, then `COCKPIT_*` variables, then the file: no .env file, no secrets dir."""
        return init_settings, env_settings, TomlFileSource(settings_cls, _reading.get())

    @classmethod
    def load(cls, path: Path) -> Self:
        """The settings from `path` (none when it is missing) and the environment; a mistake is
        an InputError naming file (or variable), line and field."""
        src = read_toml(path) if path.is_file() else None
        token = _reading.set(src)
        try:
            return cls()
        except ValidationError as exc:
            problems = pydantic_problems(src or TomlSource(path, {}), cls, exc)
            raise InputError([_blame_env(cls, p) for p in problems]) from None
        except SettingsError as exc:  # a table's variable that is not JSON
            found = re.search(r'field "(\w+)"', str(exc))
            name = f"${ENV_PREFIX}{found.group(1).upper()}" if found else "environment"
            raise InputError(
                [Problem(name, None, "", 'not JSON: a table is given as {"key": value}')]
            ) from None
        finally:
            _reading.reset(token)


def _blame_env(cls: type[FileSettings], problem: Problem) -> Problem:
    """The problem on the variable that set the value, when a variable did."""
    value: Any = EnvSettingsSource(cls)()
    parts = problem.field.split(".") if problem.field else []
    for part in parts:
        if not isinstance(value, dict) or part not in value:
            return problem
        value = value[part]
    if not parts:
        return problem
    return replace(problem, file=f"${ENV_PREFIX}{parts[0].upper()}", line=None)


class HistoryTable(Strict):
    """`[history]`: rows older than `retention_days` are pruned (0 keeps everything); `source`
    is where the TUI's `h` reads the past: `store` (this machine's) or `prometheus:URL` (a
    team's Prometheus that scrapes `cockpit exporter`)."""

    retention_days: float = Field(default=DEFAULT_RETENTION_DAYS, ge=0, strict=True)
    source: str = Field(default="store", pattern=r"^(store|prometheus:https?://[^\s]+)$")


class UserConfig(FileSettings):
    """`config.toml`, read by the CLI and the TUI alike (the TUI-only `tui.toml` would leave
    `cockpit launch` without its settings). `inventory`: the inventory folder when no
    --inventory is given ($COCKPIT_INVENTORY wins over the file)."""

    inventory: str | None = None
    history: HistoryTable = HistoryTable()


def user_config(path: Path | None = None) -> UserConfig:
    """`config.toml` (default: the user config dir's) with the environment's overrides."""
    return UserConfig.load(path or paths.user_config_file())
