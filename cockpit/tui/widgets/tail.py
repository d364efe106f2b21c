"""A bounded, batched log tail: follow/pause with a "+N new" counter, a hiding filter, levels.

Lines arrive as `LogEntry` tuples from snapshots; only entries newer than the last one shown are
written, in one `write_lines` call per flush, so a flood of lines costs one repaint per flush.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from operator import attrgetter

from rich.highlighter import Highlighter
from rich.text import Text
from textual.widgets import Log

from cockpit.tui.state.views import LogEntry
from cockpit.tui.widgets.palette import Palette

LEVELS = ("all", "warn+", "error")
_RANK = {"WARNING": 2, "ERROR": 3}  # the levels the store gives lines; any other line ranks 1


class LevelHighlighter(Highlighter):
    """WARN/ERROR lines in the theme's colours, and the search term reversed."""

    def __init__(self) -> None:
        self.colours: Palette | None = None
        self.term = ""

    def highlight(self, text: Text) -> None:
        plain = text.plain
        if self.colours is not None:
            if " ERROR" in plain or "Error" in plain or "Traceback" in plain:
                text.stylize(self.colours.error)
            elif " WARN" in plain:
                text.stylize(self.colours.warn)
        if self.term:
            lowered, term = plain.lower(), self.term.lower()
            start = lowered.find(term)
            while start >= 0:
                text.stylize("reverse", start, start + len(term))
                start = lowered.find(term, start + len(term))


def keep(entry: LogEntry, term: str, level: int) -> bool:
    """The filter: lines not matching the search term or below the level are hidden."""
    if level and _RANK.get(entry.level or "", 1) <= level:  # warn+ keeps 2 and up, error 3
        return False
    return not term or term.lower() in entry.text.lower()


class TailLog(Log):
    """Bounded (max_lines) tail; scrolling up or `f` pauses, and new lines are only counted."""

    def __init__(self, *, max_lines: int, tag_node: bool, id: str) -> None:
        super().__init__(max_lines=max_lines, highlight=True, id=id)
        self.highlighter = LevelHighlighter()
        self.tag_node = tag_node
        self.term = ""
        self.level = 0
        self.following = True
        self.pending = 0
        self._last_seq = -1
        self._source: object = None

    def _line(self, entry: LogEntry) -> str:
        return f"{entry.node}/r{entry.rank} {entry.text}" if self.tag_node else entry.text

    def feed(self, source: object, entries: Sequence[LogEntry], colours: Palette) -> None:
        """Show `entries` (a bounded buffer); writes only the ones not shown yet."""
        self.highlighter.colours = colours
        if source != self._source:
            self._source, self._last_seq = source, -1
            self.clear()
        if not entries or entries[-1].seq <= self._last_seq:
            return
        # entries are in seq order: the first unseen one is found by bisection
        fresh = entries[bisect_right(entries, self._last_seq, key=attrgetter("seq")) :]
        self._last_seq = entries[-1].seq
        lines = [self._line(e) for e in fresh[-self.max_lines :] if keep(e, self.term, self.level)]
        if not lines:
            return
        if not self.following:
            self.pending += len(lines)
        self.write_lines(lines, scroll_end=self.following)

    def refilter(self, entries: Sequence[LogEntry]) -> None:
        """Re-render the whole buffer after the filter or level changed."""
        self.clear()
        self.highlighter.term = self.term
        self._last_seq = entries[-1].seq if entries else -1
        lines = [self._line(e) for e in entries if keep(e, self.term, self.level)]
        self.write_lines(lines[-self.max_lines :], scroll_end=self.following)

    def set_following(self, on: bool) -> None:
        self.following = on
        self.auto_scroll = on
        if on:
            self.pending = 0
            self.scroll_end(animate=False)

    def describe(self) -> str:
        """The subtitle: follow/paused (+N new), filter and level."""
        parts = ["following" if self.following else f"PAUSED +{self.pending} new"]
        if self.term:
            parts.append(f"filter '{self.term}'")
        if self.level:
            parts.append(f"level {LEVELS[self.level]}")
        return " · ".join(parts)
