"""Waiting in a Pilot test for what the app does in its own time."""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.pilot import Pilot


async def until(pilot: Pilot, what: str, cond: Callable[[], bool], timeout: float = 30) -> None:
    """Wait for `cond`; the timeout is for a loaded machine (the parallel suite), not a bound."""
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.05)
