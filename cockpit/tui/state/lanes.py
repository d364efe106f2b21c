"""A lane's state: derived from what its nodes report, with a running operation's progress on top.

Observation decides (`observed`): the lane's containers by their labels, running or exited with
their exit code, the head's boot log, and whether the head's engine answers `/metrics`. A running
operation only overlays its progress (`overlaid`) while its worker runs; when it ends, whatever
way, the row is what the nodes say again. So a refused launch on a serving lane leaves it
"serving", and a failed launch whose rollback removed every rank reads "stopped" (its reason
lives in the Operations pane and its notice).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from cockpit.telemetry.boot import BootPhase, BootState
from cockpit.tui.state.inputs import RankOnNode
from cockpit.tui.state.views import LanePhase, LaneView, OpView

ENGINE_FRESH_S = 15.0
"""A head whose `/metrics` answered within this long is healthy (the feed scrapes every 2 s)."""
_BOOT_STEPS = ("start", "boot", "ready", "watch")


@dataclass(frozen=True)
class Observed:
    """What the nodes say about one lane."""

    expected: int  # ranks of a whole lane (one per node of its cluster)
    ranks: tuple[tuple[str, RankOnNode], ...]  # (node, rank) containers of the lane seen
    unknown: tuple[str, ...] = ()  # its nodes that cannot tell now (down, or not heard from)
    head_unknown: bool = False  # the head's node is one of them
    down: frozenset[str] | None = None  # those of them that are DOWN (None: all of them)
    boot: BootState | None = None  # the head's boot log, as followed
    engine_age_s: float | None = None  # since the head's engine last answered; None: never

    @property
    def running(self) -> tuple[tuple[str, RankOnNode], ...]:
        return tuple((node, r) for node, r in self.ranks if r.running)


def _cannot_tell(nodes: tuple[str, ...], down: frozenset[str] | None) -> str:
    """`dgx7 unreachable`, `dgx1 not heard from yet; dgx2 unreachable`."""
    gone = [n for n in nodes if down is None or n in down]
    unheard = [n for n in nodes if n not in gone]
    parts = [f"{', '.join(unheard)} not heard from yet"] if unheard else []
    parts += [f"{', '.join(gone)} unreachable"] if gone else []
    return "; ".join(parts)


def _exited(ranks: tuple[tuple[str, RankOnNode], ...]) -> str:
    """`rank 1 on dgx6 exited (code 1)`: a non-zero exit first, then the lowest rank."""
    gone = sorted(
        (r for r in ranks if not r[1].running), key=lambda r: (not r[1].exit_code, r[1].rank)
    )
    node, rank = gone[0]
    code = f" (code {rank.exit_code})" if rank.exit_code is not None else ""
    ended = f"exited{code}" if rank.started else "never started"
    more = f" and {len(gone) - 1} more" if len(gone) > 1 else ""
    return f"rank {rank.rank} on {node} {ended}{more}"


def observed(base: LaneView, seen: Observed) -> LaneView:
    """The lane as its nodes report it (`base` carries the static columns).

    No container: stopped (unknown when the nodes that could hold one cannot say). A rank that
    exited: failed, with its exit code. Every rank running and the head's engine answering:
    serving. Otherwise booting, with the phase the head's log reached, or unresponsive when an
    engine that answered stopped answering. Whatever the state, running ranks that no cockpit
    looks after (`RankOnNode.orphaned`) mark the lane orphaned, with each node's reason.
    """
    running = seen.running
    note = _cannot_tell(seen.unknown, seen.down) if seen.unknown and seen.ranks else ""
    orphans = [f"{node}: {rank.orphaned}" for node, rank in running if rank.orphaned]
    view = replace(base, live=bool(running), note=note, orphaned="; ".join(orphans))
    if not seen.ranks:
        if seen.head_unknown or len(seen.unknown) == seen.expected:
            detail = _cannot_tell(seen.unknown[:1], seen.down)
            return replace(view, phase=LanePhase.UNKNOWN, detail=detail)
        return replace(view, phase=LanePhase.STOPPED)
    if len(running) < len(seen.ranks):
        return replace(view, phase=LanePhase.FAILED, detail=_exited(seen.ranks))
    whole = len(running) >= seen.expected or bool(seen.unknown)  # none known to be missing
    answering = seen.engine_age_s is not None and seen.engine_age_s <= ENGINE_FRESH_S
    if whole and answering:
        return replace(view, phase=LanePhase.SERVING)
    boot = seen.boot
    if boot is not None and boot.failed:
        return replace(view, phase=LanePhase.FAILED, detail=boot.failed_line or "boot failed")
    if not whole:
        step = f"{len(running)}/{seen.expected} ranks up"
        return replace(view, phase=LanePhase.BOOTING, step=step)
    if seen.engine_age_s is not None:
        silent = f"no /metrics answer for {seen.engine_age_s:.0f}s"
        return replace(view, phase=LanePhase.UNRESPONSIVE, detail=silent)
    if seen.head_unknown:  # its workers run, the head cannot say whether it serves
        detail = f"head {_cannot_tell(seen.unknown[:1], seen.down)}"
        return replace(view, phase=LanePhase.UNKNOWN, detail=detail, note="")
    if boot is None or boot.phase is BootPhase.STARTING:
        return replace(view, phase=LanePhase.BOOTING, step="starting")
    step = "waiting for the API" if boot.ready else boot.phase.value
    return replace(view, phase=LanePhase.BOOTING, step=step, percent=boot.percent)


def overlaid(view: LaneView, op: OpView | None) -> LaneView:
    """The observed lane with the progress of its running operation, if one shows on the row.

    A launch or switch shows from its first start to ready (not while it locks and checks: a
    refused one changes nothing), and the nodes' own boot phases or "serving" win once they
    show; a sync, the lane's own or a switch's, shows its transfer on a lane that does not
    run; a stop shows until its worker ends.
    """
    if op is None or not op.running:
        return view
    if (op.op == "sync" or op.sub == "sync") and not view.live:
        pct = op.fraction * 100 if op.fraction is not None else None
        return replace(
            view, phase=LanePhase.SYNCING, step=op.step, percent=pct, eta_s=op.eta_s, detail=""
        )
    if op.op == "stop" and view.phase is not LanePhase.STOPPED:
        return replace(view, phase=LanePhase.STOPPING, step="", percent=None, detail="")
    if op.op not in ("launch", "switch") or op.step.split("/")[0] not in _BOOT_STEPS:
        return view
    if view.phase in (LanePhase.SERVING, LanePhase.BOOTING):
        return replace(view, eta_s=op.eta_s)
    # the ranks are not in the nodes' container lists yet, or an earlier run's exited ones are
    # (a launch's ready watch often begins before the nodes' next container list)
    pct = op.fraction * 100 if op.fraction is not None else None
    step = "answering, watched" if op.step == "watch" else op.message or op.step
    return replace(view, phase=LanePhase.BOOTING, step=step, percent=pct, eta_s=op.eta_s, detail="")
