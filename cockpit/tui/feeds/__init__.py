"""Where the store's facts come from: anything that yields batches of `StoreInput`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol

from cockpit.tui.state.inputs import StoreInput


class Feed(Protocol):
    """A source of facts: a live fleet poller, a recorded replay. Runs in its own worker."""

    name: str

    def batches(self) -> AsyncIterator[Sequence[StoreInput]]: ...
