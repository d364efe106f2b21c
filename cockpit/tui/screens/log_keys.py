"""The main screen's keys for the Log and NCCL tails: search, follow, level, access lines, wrap,
times, save, next log."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from textual.screen import Screen

from cockpit.atomic import write_atomic
from cockpit.tui.widgets.logs import LogPane, NcclPane
from cockpit.tui.widgets.tail import TailLog

if TYPE_CHECKING:
    from cockpit.tui.state.views import FleetSnapshot, LogSource
    from cockpit.tui.widgets.pane import ViewContext

    _Screen = Screen[None]
else:
    _Screen = object


class LogKeys(_Screen):
    """Mixed into `MainScreen`: the log keys (/, f, v, a, W, T, ctrl+s, n)."""

    if TYPE_CHECKING:
        snap: FleetSnapshot | None
        ctx: ViewContext

        def _pick_log(self, source: LogSource) -> None: ...

    def action_search(self) -> None:
        log = self.query_one(LogPane)
        if self.maximized is not None and self.maximized is not log:
            self.minimize()
        log.open_search()

    def action_follow(self) -> None:
        focused = self.focused
        tails = [focused] if isinstance(focused, TailLog) else list(self.query(TailLog))
        on = not all(t.following for t in tails)
        for tail in tails:
            tail.set_following(on)
        for pane in self.query(NcclPane).results():
            pane.refresh_subtitle()
        self.query_one(LogPane).refresh_subtitle()
        self.notify("following the tail" if on else "paused: new lines are counted", timeout=2)

    def action_level(self) -> None:
        level = self.query_one(LogPane).cycle_level()
        self.notify(f"log level: {level}", timeout=2)

    def action_access(self) -> None:
        log = self.query_one(LogPane)
        shown = log.toggle("access")
        self.notify(f"access lines {'shown' if shown else 'folded'} ({log.access} in the log)",
                    timeout=2)  # fmt: skip

    def action_wrap(self) -> None:
        wrapped = self.query_one(LogPane).toggle("wrapping")
        self.notify("log lines wrapped" if wrapped else "log lines cut (→/← by a page)", timeout=2)

    def action_timestamps(self) -> None:
        on = self.query_one(LogPane).toggle("times")
        self.notify(f"log times {'shown' if on else 'hidden'}", timeout=2)

    def action_save_log(self) -> None:
        """The Log pane's whole buffer to `logs/…` (cockpit.tui.logfile), written in a thread:
        the atomic write's fsyncs stay off the event loop. In a browser (`cockpit serve`) it is
        the browser's download instead: nothing is written on the host that serves it."""
        from cockpit.tui.logfile import log_path, log_text  # a rare key: loaded when pressed

        source = self.query_one(LogPane).source
        entries = self.snap.logs.get(source, ()) if self.snap and source else ()
        if source is None or not entries:
            self.notify("no log lines to save", severity="warning", timeout=3)
            return
        path = log_path(source, datetime.now(UTC))
        text = log_text(entries)
        if self.app.is_web:
            self.app.deliver_text(io.StringIO(text), save_filename=path.name)
            self.notify(f"{len(entries)} lines sent to the browser as {path.name}", timeout=8)
            return

        def save() -> None:
            try:
                write_atomic(path, text)
            except OSError as exc:
                self.app.call_from_thread(
                    self.notify, f"log not saved: {exc}", severity="error", timeout=8
                )
                return
            rank = f"{source.node}/r{source.rank}"
            saved = f"saved {len(entries)} lines of {rank} to {path.resolve()}"
            self.app.call_from_thread(self.notify, saved, timeout=8)

        self.run_worker(save, thread=True, group="save-log", exit_on_error=False)

    def action_next_log(self) -> None:
        sources = self.snap.log_sources if self.snap else ()
        if not sources:
            return
        current = self.ctx.log_source
        index = (sources.index(current) + 1) % len(sources) if current in sources else 0
        self._pick_log(sources[index])
