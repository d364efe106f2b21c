"""`--since`: a duration back from now (`2h`, `1d`, `1h30m`) or a moment (ISO 8601). Pure."""

from __future__ import annotations

import re
from datetime import datetime

from cockpit.errors import InputError

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"(?:\d+(?:\.\d+)?[smhdw])+")
_PART = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")


def parse_since(text: str, now: float) -> float:
    """Unix seconds of the moment `text` names; an ISO time without a zone is local time."""
    word = text.strip()
    try:
        if _DURATION.fullmatch(word):
            return now - sum(float(n) * UNITS[unit] for n, unit in _PART.findall(word))
        moment = datetime.fromisoformat(word)
        return (moment if moment.tzinfo else moment.astimezone()).timestamp()
    except (ValueError, OverflowError, OSError):  # not a time, or one no clock can hold
        raise InputError(
            f"--since {text!r}: give a duration such as 2h, 1d or 1h30m, or a time such as "
            "2026-12-04 or 2026-12-04T08:00Z"
        ) from None
