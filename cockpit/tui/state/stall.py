"""Decode-stall detection: generation rate far below its running median while requests run.

The rule of mratsim/vllm-top: a window whose generation rate is under a quarter of the median of
recent busy windows is a stall worth highlighting (a prefill monolith, a hung rank, a preemption
storm). Idle windows (no running request) neither count nor alarm.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import median

STALL_FRACTION = 0.25
MIN_HISTORY = 5


def is_decode_stall(
    busy_rates: Sequence[float], current: float | None, running: float | None
) -> bool:
    """True when requests run and `current` < 25 % of the median of earlier busy rates."""
    if current is None or not running or len(busy_rates) < MIN_HISTORY:
        return False
    reference = median(busy_rates)
    return reference > 0 and current < STALL_FRACTION * reference
