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
AGE_STEP_S = 1.0  # ages are shown to the second (`fmt_duration`)


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
        lock=last.lock if last else None,
        ops=last.ops if last else (),
    )


def node_due(node: NodeRecord, now: float) -> float | None:
    """When the node's view next changes with no input: each second while it shows the age of
    its last values (STALE, or DOWN after them), else when a live node turns STALE; never for a
    node not heard from, or DOWN with nothing heard before."""
    last = node.last
    if last is None:
        return None
    stale_at = last.at + STALE_AFTER_S
    if node.lost is not None or stale_at < now:
        return now + AGE_STEP_S
    return stale_at
