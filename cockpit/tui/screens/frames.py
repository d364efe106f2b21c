"""When the main screen repaints: when an input changed a part of the store a pane reads, at
most once a frame, and when the wall clock alone moves what a pane shows. No timer runs while
nothing changes.

The store says which parts each input changed (`Store.apply`, `Part`) and tells `changed`; the
operator's own changes (a selection, a resize, the past figures of `h`) `touch` parts here. The
first change arms a one-shot frame timer (FRAME_S): whatever arrives before it fires is painted
in the same repaint, so a flood of lines costs one repaint a frame and the logs are written in
batches. The nodes' figures, which a big fleet changes many times a second (every node's GPU
line, each second), repaint at most every HELD_EVERY_S (`HELD`); the operator's own changes are
never held. The age tick is armed for the moment something shown moves by itself
(`Store.next_change`: a node's age, a live node turning STALE, an engine gone quiet, an
operation's elapsed time; the history's next sample when a recorder wants one) and repaints
only the parts that hold such things (`TIMED`). A tick that finds the clock where the last repaint
left it (a frozen clock, as the tests and the benchmarks run) repaints nothing and looks again a
second later, as the poll did (it repainted for the clock only once it had moved a second).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.message_pump import MessagePump
from textual.timer import Timer

from cockpit.tui.state.nodes import AGE_STEP_S
from cockpit.tui.state.parts import ALL, TIMED, Part

FRAME_S = 0.05  # the panes repaint at most 20 times a second, however fast facts arrive
HELD = frozenset({Part.NODES})
HELD_EVERY_S = 0.5
"""The Nodes pane repaints at most twice a second for the store's changes: each node samples once
a second, and at 128 nodes a sample lands in nearly every frame, each repaint looking over the
128 rows (`NodesPane.fill` was ~10 % of the TUI's samples in py-spy while keys were pressed). The
128-node TUI's idle CPU did not fall with it (RESULTS `tui_keys`); the recorded scene's idle with
the wall clock did (`tui_idle_cpu`: 27-30 → 19.6 ms a second)."""


class Frames:
    """The parts waiting to be painted, the frame timer and the age tick of one screen."""

    def __init__(
        self, owner: MessagePump, flush: Callable[[], None], clock: Callable[[], float]
    ) -> None:
        """`owner` runs the timers; `flush` paints the parts `take` returns; `clock` is the
        wall clock the views age by (the app's)."""
        self._owner = owner
        self._flush = flush
        self._clock = clock
        self._painted_at = 0.0  # the clock at the last repaint
        self.dirty: set[Part] = set()
        self._frame: Timer | None = None
        self._tick: Timer | None = None
        self._tick_at = 0.0  # the wall-clock time the armed tick is for
        self._held: set[Part] = set()  # changed in the store, waiting for HELD_EVERY_S
        self._held_at = 0.0  # time.monotonic() of the last repaint of the HELD parts
        self._release: Timer | None = None

    def changed(self) -> None:
        """Something changed (the store's parts are taken from it at the repaint)."""
        if self._frame is None:
            self._frame = self._owner.set_timer(FRAME_S, self._frame_due, name="frame")

    def touch(self, parts: frozenset[Part] = ALL) -> None:
        """`parts` repaint at the next frame."""
        self.dirty |= parts
        self.changed()

    def take(self, store_dirty: frozenset[Part]) -> frozenset[Part]:
        """What the repaint about to happen paints (the frame it was waiting for is not needed):
        the HELD parts the store changed wait for their release when they were painted less
        than HELD_EVERY_S ago."""
        if self._frame is not None:
            self._frame.stop()
            self._frame = None
        now = time.monotonic()
        held = (store_dirty & HELD) - self.dirty
        if held and now - self._held_at < HELD_EVERY_S:
            self._held |= held
            store_dirty -= held
            if self._release is None:
                wait = self._held_at + HELD_EVERY_S - now
                self._release = self._owner.set_timer(wait, self._released, name="held")
        parts = frozenset(self.dirty) | store_dirty
        self.dirty.clear()
        if parts & HELD:
            self._held_at = now
            self._held.clear()
            if self._release is not None:
                self._release.stop()
                self._release = None
        return parts

    def arm_tick(self, due: float | None, now: float) -> None:
        """After a repaint at `now`: the age tick for `due` (wall clock), unless one is armed
        sooner; none when nothing shown moves with time."""
        self._painted_at = now
        if due is None:
            if self._tick is not None:
                self._tick.stop()
                self._tick = None
            return
        if self._tick is not None and self._tick_at <= due:
            return
        if self._tick is not None:
            self._tick.stop()
        self._tick_at = due
        self._tick = self._owner.set_timer(max(due - now, FRAME_S), self._ticked, name="ages")

    def _released(self) -> None:
        self._release = None
        self.touch(frozenset(self._held))

    def _frame_due(self) -> None:
        self._frame = None
        self._flush()

    def _ticked(self) -> None:
        self._tick = None
        if self._clock() == self._painted_at:  # a frozen clock (the tests'): nothing moved
            self._tick_at = self._painted_at + AGE_STEP_S
            self._tick = self._owner.set_timer(AGE_STEP_S, self._ticked, name="ages")
            return
        self.touch(TIMED)
