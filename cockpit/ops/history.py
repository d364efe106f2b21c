"""Boot-time history: how long a lane took to become ready on a cluster, for the next boot's ETA.

A first Pro boot takes ~40 min (seed §2); knowing the previous boot of the same lane on the same
cluster turns "booting…" into "about 12 min left". One small JSON file under the user's state
directory (`$COCKPIT_STATE_DIR` overrides it), the last few boots per lane@cluster, replaced
atomically (`cockpit.atomic`: a writer killed mid-save leaves the previous file and no orphan).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from cockpit import paths
from cockpit.atomic import write_atomic

KEEP = 10


def _key(lane: str, cluster: str) -> str:
    return f"{lane}@{cluster}"


@dataclass
class BootHistory:
    """Read and append boot durations; a missing or broken file reads as empty."""

    path: Path

    @classmethod
    def default(cls) -> BootHistory:
        return cls(paths.boot_history_file())

    def _read(self) -> dict[str, list[dict[str, float]]]:
        try:
            data = json.loads(self.path.read_text())
        except (FileNotFoundError, json.JSONDecodeError, OSError):
            return {}
        return data if isinstance(data, dict) else {}

    def last_seconds(self, lane: str, cluster: str) -> float | None:
        """Seconds to ready of the previous successful boot, None when there was none."""
        boots = self._read().get(_key(lane, cluster)) or []
        try:
            return float(boots[-1]["seconds"])
        except (IndexError, KeyError, TypeError, ValueError):
            return None

    def record(self, lane: str, cluster: str, seconds: float, finished_at: float) -> None:
        data = self._read()
        boots = [*(data.get(_key(lane, cluster)) or []), {"seconds": seconds, "at": finished_at}]
        data[_key(lane, cluster)] = boots[-KEEP:]
        write_atomic(self.path, json.dumps(data, indent=1) + "\n")


def eta_seconds(previous: float | None, elapsed: float) -> float | None:
    """Seconds left if this boot takes as long as the previous one (never below zero)."""
    return None if previous is None else max(0.0, previous - elapsed)
