"""The operations' runs: each kept while its worker runs (whatever its events name: a switch's
nested sync says op "sync"), the last few that ended, and the bench points they finished."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import replace

from cockpit.bench.events import BenchWarning, PointFinished, PointStarted, SweepPlanned
from cockpit.bench.models import SweepPlan, depth_label
from cockpit.errors import EXIT_REFUSED
from cockpit.events import (
    Finished,
    Notice,
    OpEvent,
    Planned,
    Progress,
    Severity,
    StepFinished,
    StepStarted,
)
from cockpit.tui.state.views import BenchRow, OpView, lane_key

OPS_KEPT = 12
BENCH_POINTS = 64
BENCH_EVENTS = (SweepPlanned, PointFinished)  # the events that change the bench points


def bench_mode(cold: bool, driver: str) -> str:
    """What a bench point measured, named when it is not what the Bench pane's baselines measure
    (the built-in driver's warm sweep): `COLD`, `llama-benchy`, or both; "" when it is."""
    return " · ".join((["COLD"] if cold else []) + ([driver] if driver != "builtin" else []))


def headline(tg_tps: float, depth: int, concurrency: int, mode: str) -> str:
    """A lane's "last bench" cell: its last point's decode rate, where, and what it measured."""
    named = f" {mode}" if mode else ""
    return f"tg {tg_tps:.1f} t/s @{depth_label(depth)} c{concurrency}{named}"


class Runs:
    """The running operations by run, the ended ones, the bench points."""

    def __init__(
        self,
        baselines: Mapping[str, Mapping[tuple[int, int], float]],
        headlines: Mapping[str, str] | None = None,
    ) -> None:
        """`headlines`: lane key → its last bench before this session (its newest report)."""
        self.baselines = baselines
        self.headlines = dict(headlines or {})
        self.running: dict[int, OpView] = {}
        self.done: deque[OpView] = deque(maxlen=OPS_KEPT)
        self.bench: deque[BenchRow] = deque(maxlen=BENCH_POINTS)
        self._sweeps: dict[int, SweepPlan] = {}  # a running bench's plan, by run

    def update(self, run: int, event: OpEvent) -> str | None:
        """Fold one event of `run` in; returns the lane key of a launch or switch it plans (the
        store lets go of what that lane's earlier run left)."""
        if isinstance(event, SweepPlanned):
            self._sweeps[run] = event.plan
        if isinstance(event, PointFinished):
            self._bench_point(run, event)
        return self._op(run, event)

    def ended(self, run: int, why: str) -> None:
        """The run's worker is gone: without its Finished, it ended the way `why` says."""
        self._sweeps.pop(run, None)
        current = self.running.pop(run, None)
        if current is not None:
            self.done.appendleft(replace(current, ok=False, summary=why))

    def launching(self) -> set[str]:
        """Lane keys a launch or switch is bringing up (their containers may not be listed)."""
        return {
            lane_key(op.lane, op.cluster)
            for op in self.running.values()
            if op.op in ("launch", "switch")
        }

    def benching(self, lane: str, cluster: str) -> bool:
        return any(
            op.op == "bench" and (op.lane, op.cluster) == (lane, cluster)
            for op in self.running.values()
        )

    def ops(self) -> tuple[OpView, ...]:
        """The running ones, newest first, then the ended ones, newest first."""
        return (*reversed(self.running.values()), *self.done)

    def _bench_point(self, run: int, event: PointFinished) -> None:
        """A finished point; its Δ only against a baseline that measured the same (the pane's are
        warm built-in sweeps: a cold point against one reads the seed's artifact as −48 %)."""
        spec = event.result.spec
        sweep = self._sweeps.get(run)
        mode = bench_mode(spec.cold, sweep.driver if sweep else "builtin")
        base = (
            None if mode else self.baselines.get(event.lane, {}).get((spec.depth, spec.concurrency))
        )
        tg = event.result.inference.tg if event.result.inference else None
        self.bench.append(
            BenchRow(
                lane=event.lane,
                cluster=event.cluster,
                depth=spec.depth,
                concurrency=spec.concurrency,
                tg_tps=event.result.tg,
                pp_tps=event.result.pp,
                baseline_tg_tps=base,
                flags=tuple(f.kind.value for f in event.result.flags),
                tg_std=tg.std if tg else None,
                runs=len(tg.values) if tg else 0,
                mode=mode,
            )
        )

    def bench_headline(
        self, lane: str, cluster: str, followed: tuple[BenchRow, ...] = ()
    ) -> str | None:
        """The lane's last bench: its last point measured in this session (its own benches',
        then other cockpits' it `followed`), else its newest report's."""
        points = [
            p
            for p in (*self.bench, *followed)
            if (p.lane, p.cluster) == (lane, cluster) and p.tg_tps is not None
        ]
        if not points:
            return self.headlines.get(lane_key(lane, cluster))
        p = points[-1]
        assert p.tg_tps is not None
        return headline(p.tg_tps, p.depth, p.concurrency, p.mode)

    def _op(self, run: int, event: OpEvent) -> str | None:
        """Fold one event into its run's view; a sub-operation's events (the sync a launch or a
        switch runs) show as steps of the run, and only the run's own Finished ends it."""
        current = self.running.get(run)
        if current is None:
            steps = event.steps if isinstance(event, Planned) else ()
            message = event.summary if isinstance(event, Planned) else ""
            current = OpView(
                event.op, event.lane, event.cluster, event.ts, steps, message=message, run=run
            )
            if isinstance(event, Planned):
                self.running[run] = current
                if event.op in ("launch", "switch"):
                    return lane_key(event.lane, event.cluster)
            return None
        sub = "" if event.op == current.op else event.op
        match event:
            case StepStarted():
                where = f" on {event.node}" if event.node else ""
                label = f"{sub} {event.step}" if sub else event.step
                current = replace(
                    current, current=label + where, step=event.step, sub=sub, fraction=None,
                    message="",
                )  # fmt: skip
            case StepFinished(ok=False):
                current = replace(
                    current, notices=(*current.notices, f"{event.step}: {event.detail}")[-5:]
                )
            case Progress():
                current = replace(
                    current,
                    current=f"{sub} {event.step}" if sub else event.step,
                    step=event.step,
                    sub=sub,
                    fraction=event.fraction,
                    eta_s=event.eta_s,
                    message=event.message,
                )
            case PointStarted():
                current = replace(
                    current, current=event.point.label, fraction=event.index / max(event.total, 1)
                )
            case BenchWarning():
                current = replace(current, notices=(*current.notices, event.message)[-5:])
            case Notice():
                node = event.node if event.severity is Severity.ERROR and event.node else None
                current = replace(
                    current,
                    notices=(*current.notices, event.message)[-5:],
                    node=(node or "").split(",")[0] or current.node,
                )
            case Finished() if not sub:
                self.running.pop(run, None)
                # a refusal changes nothing on screen but its notice
                if event.exit_code != EXIT_REFUSED:
                    self.done.appendleft(
                        replace(
                            current,
                            ok=event.ok,
                            summary=event.summary,
                            exit_code=event.exit_code,
                            fraction=1.0 if event.ok else current.fraction,
                        )
                    )
                return None
            case Finished(ok=False):
                current = replace(current, notices=(*current.notices, event.summary)[-5:])
        self.running[run] = current
        return None
