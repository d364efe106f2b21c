"""The TUI's user settings (theme, keymap overrides, SLOs) in `tui.toml` under the user config dir.

Kept apart from the inventory's `config.toml` so saving the theme never rewrites a file the
operator edits by hand. Saving edits the document with tomlkit, which keeps the operator's
comments, key order and layout, sets only the top-level `theme` (a `theme` binding in [keymap]
is another key), and replaces the file atomically (`cockpit.atomic`): a crash mid-save leaves the
previous file, never an empty one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pydantic import Field

from cockpit.atomic import write_atomic
from cockpit.config.models import Strict
from cockpit.errors import InputError
from cockpit.settings import FileSettings
from cockpit.telemetry.slo import DEFAULT_SLO, Slo


@dataclass(frozen=True)
class TuiSettings:
    path: Path
    theme: str | None = None
    keymap: dict[str, str] = field(default_factory=dict)  # binding id → keys ("ctrl+l,f2")
    slo: Slo = DEFAULT_SLO  # what the Engine pane's goodput counts against


class SloTable(Strict):
    """`[slo]`: per-request latency objectives in milliseconds."""

    ttft_ms: float = Field(default=DEFAULT_SLO.ttft_s * 1000, gt=0, strict=True)
    tpot_ms: float = Field(default=DEFAULT_SLO.tpot_s * 1000, gt=0, strict=True)


class TuiFile(FileSettings):
    """The whole file: a misspelt key or table is refused with the one it should be; each key
    has its variable, which wins (`COCKPIT_THEME`, `COCKPIT_SLO='{"ttft_ms": 2000}'`)."""

    theme: str | None = None
    keymap: dict[str, str] = Field(default_factory=dict)
    slo: SloTable = SloTable()


def load_settings(path: Path) -> TuiSettings:
    """Read `tui.toml` and its `COCKPIT_*` variables; a missing file means defaults, a broken one
    is an input error naming file, line and field (as the inventory's)."""
    data = TuiFile.load(path)
    slo = Slo(ttft_s=data.slo.ttft_ms / 1000, tpot_s=data.slo.tpot_ms / 1000)
    return TuiSettings(path, data.theme, dict(data.keymap), slo)


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
