"""Per node: the last good poll, the failed polls since, the utilisation series, and the view a
pane shows of them (LIVE, STALE with the age of its last values, DOWN, or not heard from yet)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from cockpit.tui.state.inputs import NodeLost, NodeSampled
from cockpit.tui.state.views import NodeHealth, NodeView

HISTORY = 120  # samples kept per series (about 2-6 minutes at the poll rates used)
STALE_AFTER_S = 10.0
DOWN_AFTER_S = 30.0
"""A node whose probe keeps failing this long is DOWN even while its link still connects."""


@dataclass
class NodeRecord:
    last: NodeSampled | None = None
    lost: NodeLost | None = None
    lost_since: float | None = None  # when the current run of failed polls began
    util: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))


def node_view(name: str, node: NodeRecord, now: float) -> NodeView:
    last, lost = node.last, node.lost
    age = now - last.at if last else None
    if lost is not None:
        long_lost = node.lost_since is not None and now - node.lost_since > DOWN_AFTER_S
        health = NodeHealth.DOWN if lost.down or long_lost or last is None else NodeHealth.STALE
    elif last is None:
        health = NodeHealth.WAITING
    else:
        health = NodeHealth.STALE if age is not None and age > STALE_AFTER_S else NodeHealth.LIVE
    return NodeView(
        name=name,
        health=health,
        age_s=age,
        error=lost.error if lost else None,
        gpu=last.gpu if last else None,
        memory=last.memory if last else None,
        ranks=last.ranks if last else (),
        util_history=tuple(node.util),
        retry_in_s=lost.retry_in_s if lost else None,
        ranks_known=last.ranks_known if last else False,
        host=last.host if last else None,
    )
