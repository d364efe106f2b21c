"""Where the store's facts come from: anything that yields batches of `StoreInput` (the app posts
each input of a batch, in order, as its typed message: `cockpit.tui.messages`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol, runtime_checkable

from cockpit.tui.state.inputs import RankOnNode, StoreInput


class Feed(Protocol):
    """A source of facts: a live fleet poller, a recorded replay. Runs in its own worker."""

    name: str

    def batches(self) -> AsyncIterator[Sequence[StoreInput]]: ...


@runtime_checkable
class FollowsContainers(Protocol):
    """A feed that can follow a container's log as soon as an operation started it."""

    def follow(self, node: str, name: str, rank: RankOnNode) -> None: ...


@runtime_checkable
class RefreshesNodes(Protocol):
    """A feed that can look at a node again at once (an operation changed what runs there)."""

    def refresh(self, node: str) -> None: ...
