"""Messages the feeds and the operations post to the app: one class per kind of store input.

The feeds' batches and the operations' events reach the store only through these, in the order
they were posted. A message whose input only the latest of its kind matters for is coalesced:
Textual's message pump, about to handle a message, drops it when `can_replace(next)` is True for
the message queued right behind it, and handles that one instead. So a newer scrape of a lane
replaces an older one still queued, and a node's newer good poll an older result of the node;
log lines and operation events are never dropped (they append, and each one counts).
"""

from __future__ import annotations

from textual.message import Message

from cockpit.events import OpEvent
from cockpit.tui.state.inputs import (
    EngineSampled,
    NodeLost,
    NodeSampled,
    OpEnded,
    OpUpdate,
    RankLines,
    StoreInput,
)


class StoreMessage(Message, bubble=False):
    """A message carrying one store input (`input`), posted to the app."""

    @property
    def input(self) -> StoreInput:
        raise NotImplementedError


class NodePolled(StoreMessage):
    """A node's poll: a good sample, or a failed poll. A queued result of a node is dropped when
    a good sample of the same node comes right behind it: a sample replaces all the store keeps
    of the node (a failed poll only marks what it has, so it never replaces anything: the time
    its failures began, and the last figures, would be lost)."""

    def __init__(self, result: NodeSampled | NodeLost) -> None:
        super().__init__()
        self.result = result

    @property
    def input(self) -> StoreInput:
        return self.result

    def can_replace(self, message: Message) -> bool:
        """True when `message`, queued right behind this one, supersedes it."""
        return (
            isinstance(message, NodePolled)
            and isinstance(message.result, NodeSampled)
            and message.result.node == self.result.node
        )


class EngineScraped(StoreMessage):
    """A lane's `/metrics` scrape. Its counters are cumulative, so a newer scrape of the same
    lane right behind a queued one supersedes it (the rates then span both)."""

    def __init__(self, sample: EngineSampled) -> None:
        super().__init__()
        self.sample = sample

    @property
    def input(self) -> StoreInput:
        return self.sample

    def can_replace(self, message: Message) -> bool:
        """True when `message`, queued right behind this one, supersedes it."""
        return isinstance(message, EngineScraped) and (
            message.sample.lane,
            message.sample.cluster,
        ) == (self.sample.lane, self.sample.cluster)


class LogLines(StoreMessage):
    """New log lines of one rank: never coalesced (each batch appends)."""

    def __init__(self, lines: RankLines) -> None:
        super().__init__()
        self.lines = lines

    @property
    def input(self) -> StoreInput:
        return self.lines


class OpProgress(StoreMessage):
    """An event of operation run `run`: never coalesced (every step, notice and bench point
    counts, and the history records each)."""

    def __init__(self, run: int, event: OpEvent) -> None:
        super().__init__()
        self.update = OpUpdate(run, event)

    @property
    def input(self) -> StoreInput:
        return self.update


class OpFinished(StoreMessage):
    """The worker of run `run` ended, whatever way: never coalesced (its run leaves the running
    overlay, with `why` as its outcome when no Finished came)."""

    def __init__(self, run: int, why: str) -> None:
        super().__init__()
        self.ended = OpEnded(run, why)

    @property
    def input(self) -> StoreInput:
        return self.ended


def message_for(item: StoreInput) -> StoreMessage:
    """The typed message that carries `item` (a feed's batch is posted item by item, in order)."""
    match item:
        case NodeSampled() | NodeLost():
            return NodePolled(item)
        case EngineSampled():
            return EngineScraped(item)
        case RankLines():
            return LogLines(item)
        case OpUpdate():
            return OpProgress(item.run, item.event)
        case OpEnded():
            return OpFinished(item.run, item.why)
