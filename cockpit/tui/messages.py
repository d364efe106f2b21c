"""Messages the workers post to the app: the only way facts reach the store."""

from __future__ import annotations

from collections.abc import Sequence

from textual.message import Message

from cockpit.tui.state.inputs import StoreInput


class Facts(Message):
    """A batch of store inputs from a feed or an operation, applied in order."""

    def __init__(self, inputs: Sequence[StoreInput]) -> None:
        super().__init__()
        self.inputs = inputs
