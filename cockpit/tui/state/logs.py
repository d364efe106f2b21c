"""Per rank: its container log, bounded; per lane: the NCCL lines of its ranks, merged, and a
transport summary per rank's stream. The head's lines also move its lane's boot state on."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from cockpit.redact import shown
from cockpit.telemetry.boot import BootPhase, BootState, advance
from cockpit.telemetry.docker_out import split_time
from cockpit.telemetry.nccl_transport import TransportTracker, is_nccl_line
from cockpit.telemetry.severity import severity
from cockpit.telemetry.vllm_log import routine_access
from cockpit.tui.state.inputs import RankLines
from cockpit.tui.state.views import LogEntry

LOG_LINES = 5000  # per rank
NCCL_LINES = 2000  # merged, per lane
NCCL_SEEN = 512
BOOT_DONE = (BootPhase.READY,)  # after a failure, a more decisive line may still come


@dataclass
class RankLog:
    lines: deque[LogEntry] = field(default_factory=lambda: deque(maxlen=LOG_LINES))
    dropped: int = 0
    access: int = 0  # routine access lines among `lines`
    frozen: tuple[LogEntry, ...] = ()
    frozen_seq: int = -1

    def entries(self) -> tuple[LogEntry, ...]:
        """The lines as an immutable tuple, made again only when a line came since."""
        last = self.lines[-1].seq if self.lines else -1
        if last != self.frozen_seq:
            self.frozen, self.frozen_seq = tuple(self.lines), last
        return self.frozen


@dataclass
class LaneNccl:
    """One lane's NCCL lines: the merged tail and a transport summary per rank's stream."""

    tail: deque[LogEntry] = field(default_factory=lambda: deque(maxlen=NCCL_LINES))
    ranks: dict[tuple[str, int], TransportTracker] = field(default_factory=dict)
    seen: dict[str, None] = field(default_factory=dict)  # recent INFO lines (ordered LRU)


def append_lines(
    item: RankLines, log: RankLog, nccl: LaneNccl, boot: BootState | None, seq: int
) -> tuple[BootState | None, int, bool]:
    """Append a rank's lines to its log (entries numbered from `seq` on); NCCL lines also go to
    the lane's merged tail and the rank's transport summary; the head's lines (`boot` given)
    advance its boot state. Returns the boot state, the last number used, and whether an NCCL
    line came.

    Per line this is a few substring tests (`severity` parses only a line holding a level
    word) plus the tracker's parse of NCCL lines: a flood of tens of thousands of lines a
    second must not starve the event loop.
    """
    log.dropped += item.dropped
    seen = nccl.seen
    tracker: TransportTracker | None = None
    lines = log.lines
    saw_nccl = False
    for raw in item.lines:
        seq += 1
        ts, text = split_time(raw)
        level = severity(text)
        access = level is None and routine_access(text)
        entry = LogEntry(seq, item.node, item.rank, shown(text), level, ts, access)
        if is_nccl_line(text):
            saw_nccl = True
            nccl.tail.append(entry)
            if level is not None or text not in seen:  # a repeated INFO line adds nothing
                if tracker is None:
                    tracker = nccl.ranks.setdefault((item.node, item.rank), TransportTracker())
                tracker.feed(text)
                seen[text] = None
                if len(seen) > NCCL_SEEN:
                    del seen[next(iter(seen))]
        if len(lines) == LOG_LINES and lines[0].access:  # about to fall off the buffer
            log.access -= 1
        lines.append(entry)
        log.access += access
        if boot is not None and boot.phase not in BOOT_DONE:
            boot = advance(boot, text)
    return boot, seq, saw_nccl
