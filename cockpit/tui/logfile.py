"""A Log pane's buffer as a file (`ctrl+s`): `logs/<YYYY-MM-DD_HHMMSS>_<lane>_<node>-r<rank>.log`
in the current folder, as bench reports go to `reports/`.

The file holds the whole buffer, whatever the pane folds or filters (access lines, a search, a
level): a saved log is evidence, read later with other tools. Each line keeps docker's time of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from cockpit.bench.artifacts import safe_label, timestamp
from cockpit.tui.state.views import LogEntry, LogSource

LOGS_DIR = Path("logs")


def log_path(source: LogSource, now: datetime, folder: Path = LOGS_DIR) -> Path:
    """Where the buffer of `source` saved at `now` goes (lane keys keep their `@`)."""
    lane = "@".join(safe_label(part) for part in source.lane.split("@"))
    return folder / f"{timestamp(now)}_{lane}_{safe_label(source.node)}-r{source.rank}.log"


def log_text(entries: Sequence[LogEntry]) -> str:
    """The lines as the container wrote them, each after its time when the stream had one."""
    return "".join(f"{e.ts} {e.text}\n" if e.ts else f"{e.text}\n" for e in entries)
