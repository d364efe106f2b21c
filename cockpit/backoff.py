"""The one retry policy of the cockpit: what fails again waits twice as long, up to a cap.

The SSH pool spaces its reconnects with it, the status poller its probe restarts and the TUI its
feed restarts: a fleet that is down is asked ever more slowly, the same way everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """Capped exponential delay: base, 2·base, 4·base … cap, after 1, 2, 3 … failures in a row."""

    base: float = 1.0
    cap: float = 30.0

    def delay(self, failures: int) -> float:
        """Seconds to wait after `failures` failures in a row (none: no wait)."""
        if failures <= 0:
            return 0.0
        return min(self.cap, self.base * 2 ** (failures - 1))
