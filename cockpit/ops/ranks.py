"""What a launch knows of each rank from its followed log, and who is to blame (pure).

The launch follows every rank with `docker logs -f --timestamps`: each line carries the node's
own time (RFC 3339, nanoseconds), so failures on different nodes can be ordered. A rank fails on
a decisive line: the boot tracker's (exception, NCCL timeout, ERROR line) at any phase, or an NCCL
WARN that ends NCCL's setup (`Call to ibv_modify_qp failed`, an unhandled system error, a failed
proxy Connect). When ranks fail, the cause is the earliest failure (a rank's first failure line,
or its container's end when it died without a word); the others are its consequences.
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from cockpit.plan import RankCommand
from cockpit.telemetry.boot import BootPhase, BootState, BootTracker
from cockpit.telemetry.nccl_events import InitComplete, NcclWarning, parse_nccl_event

TAIL_LINES = 40
_DECISIVE_NCCL = frozenset({"ibv", "system", "connect"})
_KIND_RANK = {"nccl": 3, "timeout": 2, "exception": 2, "error": 1, "traceback": 0}
_TS_RE = re.compile(
    r"^(?P<date>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(?P<frac>\d+))?(?P<tz>Z|[+-]\d\d:\d\d)\s"
)
_PHASES = list(BootPhase)
_ECHO_RE = re.compile(
    r"Worker proc \S+ died unexpectedly|Connection closed by peer|Connection reset by peer|"
    r"remote process exited|EngineDeadError|Broken pipe"
)
"""Lines by which a rank reports a peer's death (vLLM's executor, gloo, NCCL), not its own
fault: the nodes' clocks and log relays are only ms apart, so the peer's own line may be stamped
a few ms after its echo; an echo never outranks a rank that failed for a reason of its own."""


def split_timestamp(line: str) -> tuple[float | None, str]:
    """`docker logs --timestamps` line → (epoch seconds of the node's clock, the line itself)."""
    match = _TS_RE.match(line)
    if not match:
        return None, line
    return docker_time(match.group(0).strip()), line[match.end() :]


def docker_time(text: str | None) -> float | None:
    """RFC 3339 with any number of fraction digits (Docker prints nine) → epoch seconds; None for
    Docker's zero time or anything unparsable."""
    match = _TS_RE.match((text or "") + " ")
    if not match:
        return None
    tz = match.group("tz").replace("Z", "+00:00")
    try:
        whole = datetime.fromisoformat(match.group("date") + tz)
    except ValueError:
        return None
    if whole.year < 1971:
        return None
    frac = match.group("frac")
    return whole.astimezone(UTC).timestamp() + (float("0." + frac) if frac else 0.0)


def nccl_failure(text: str) -> str | None:
    """The line when it is an NCCL WARN that ends NCCL's setup, else None."""
    if "NCCL WARN" not in text and "NCCL ERROR" not in text:
        return None
    event = parse_nccl_event(text)
    if not isinstance(event, NcclWarning) or event.kind not in _DECISIVE_NCCL:
        return None
    # NCCL retries some connects itself ("… Connection refused, retrying"): not the end yet
    return None if "retrying" in event.text.lower() else text.strip()


def _progress(state: BootState, nccl_done: bool) -> tuple[object, ...]:
    """What counts as progress: a phase or a figure within it moving (not hints, not errors)."""
    return (
        state.phase,
        state.percent,
        state.weights_pct,
        state.autotune_done,
        state.graph_pct,
        state.kv_pool_tokens,
        state.server_url,
        nccl_done,
    )


@dataclass
class RankView:
    """One rank as its followed log shows it; `feed` returns True when the launch should look."""

    command: RankCommand
    started_at: float  # monotonic time the watch began: progress is measured from it
    tracker: BootTracker = field(default_factory=BootTracker)
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=TAIL_LINES))
    nccl_done: bool = False
    nccl_problem: str | None = None
    failed_at: float | None = None  # node time of the first decisive line
    failure_seen: bool = False
    ended: bool = False
    ended_at: float | None = None  # node time the container finished (from docker inspect)
    exit_code: int | None = None
    progressed_at: float = 0.0  # monotonic
    _progress: tuple[object, ...] = ()
    _errors_seen: str | None = None

    def __post_init__(self) -> None:
        self.progressed_at = self.started_at
        self._progress = _progress(self.tracker.state, False)

    @property
    def rank(self) -> int:
        return self.command.rank

    @property
    def node(self) -> str:
        return self.command.node

    @property
    def state(self) -> BootState:
        return self.tracker.state

    @property
    def who(self) -> str:
        if self.rank == 0:
            return f"head (rank 0) on {self.node}"
        return f"rank {self.rank} on {self.node}"

    @property
    def past_nccl(self) -> bool:
        """NCCL's Init COMPLETE was printed, or a later phase (weights come after NCCL init)."""
        return self.nccl_done or self.state.phase not in (BootPhase.STARTING, BootPhase.FAILED)

    @property
    def failed(self) -> bool:
        return self.failure_seen or self.ended

    def feed(self, line: str, now: float) -> bool:
        """One more log line at monotonic time `now`."""
        at, text = split_timestamp(line)
        if text.strip():
            self.tail.append(text)
        before = self.state
        state = self.tracker.feed(text)
        if not self.nccl_done and isinstance(parse_nccl_event(text), InitComplete):
            self.nccl_done = True
        problem = nccl_failure(text)
        if problem and self.nccl_problem is None:
            self.nccl_problem = problem
        # before ready the tracker turns FAILED; after it a new error is kept in last_error
        erred = (
            state.failed
            or problem is not None
            or (state.last_error is not None and state.last_error != before.last_error)
        )
        look = state != before or problem is not None
        if erred and not self.failure_seen:
            self.failure_seen, self.failed_at, look = True, at, True
        progress = _progress(state, self.nccl_done)
        if progress != self._progress:
            self._progress, self.progressed_at, look = progress, now, True
        return look

    def decisive(self) -> str:
        """The line that says why this rank failed (or the last one it printed)."""
        state = self.state
        line = self.nccl_problem or state.failed_line or state.last_error
        return line or (self.tail[-1] if self.tail else "(no log output)")

    @property
    def echoes_a_peer(self) -> bool:
        """Its failure line reports another rank's death rather than a fault of its own."""
        return self.failure_seen and _ECHO_RE.search(self.decisive()) is not None

    def kind(self) -> str:
        if self.nccl_problem:
            return "nccl"
        return self.state.failed_kind or ("error" if self.state.last_error else "")

    def failure(self) -> str:
        """`failed (exit code 1)`, `exited (exit code 137)`…: how this rank ended."""
        why = "failed" if self.failure_seen else "exited"
        return why + (f" (exit code {self.exit_code})" if self.exit_code is not None else "")


def blame(ranks: Sequence[RankView]) -> tuple[RankView, list[RankView]]:
    """The cause among the failed ranks (earliest on the nodes' clocks, a rank failing for a
    reason of its own before one that only reports a peer's death; at equal times the more
    decisive line), and the other failed ranks, its consequences, in the order they failed."""
    failed = [r for r in ranks if r.failed]
    if not failed:
        raise ValueError("no rank failed")

    def when(rank: RankView) -> float:
        times = [t for t in (rank.failed_at, rank.ended_at) if t is not None]
        return min(times) if times else math.inf

    ordered = sorted(failed, key=lambda r: (when(r), -_KIND_RANK.get(r.kind(), -1), r.rank))
    cause = next((r for r in ordered if not r.echoes_a_peer), ordered[0])
    return cause, [r for r in ordered if r is not cause]


def stalled(ranks: Sequence[RankView], head_serving: bool) -> RankView:
    """The rank a lane without progress waits on: the head when its log says ready but it does
    not answer, else the least advanced rank (at equal phases the one quiet for longest)."""
    head = next(r for r in ranks if r.rank == 0)
    if head_serving:
        return head
    return min(ranks, key=lambda r: (_PHASES.index(r.state.phase), r.progressed_at, r.rank))


def last_progress(ranks: Sequence[RankView]) -> float:
    return max(r.progressed_at for r in ranks)
