"""A bounded, batched log tail: follow/pause with a "+N new" counter, a hiding filter, levels,
access lines folded, wrap or cut lines (read a page at a time), times on demand.

Lines arrive as `LogEntry` tuples from snapshots; only entries newer than the last one shown are
written, in one `write_lines` call per flush, so a flood of lines costs one repaint per flush.
A wrapped line is written as rows of the pane's width (Textual's `Log` stays the fast, lazily
rendered widget it is); a resize rewraps the buffer.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Sequence
from operator import attrgetter

from rich.cells import chop_cells
from rich.highlighter import Highlighter
from rich.text import Text
from textual.events import Resize
from textual.geometry import Size
from textual.reactive import Reactive
from textual.widgets import Log

from cockpit.telemetry.severity import ERROR, Severity, rank
from cockpit.tui.keymap import TAIL_BINDINGS
from cockpit.tui.state.views import LogEntry
from cockpit.tui.widgets.palette import Palette

LEVELS = ("all", "warn+", "error")  # the filter's choices; index n keeps lines of rank > n


class LevelHighlighter(Highlighter):
    """The rows of WARNING/ERROR lines in the theme's colours, and the search term reversed.

    A row is painted by the level the store gave its line (`cockpit.telemetry.severity`), the
    one the level filter keeps by, never by words in its text: red is what "error" shows."""

    def __init__(self, rows: int) -> None:
        self.colours: Palette | None = None
        self.term = ""
        self.rows = rows  # as many as the log holds: older marks belong to rows gone from it
        self.levels: OrderedDict[str, Severity] = OrderedDict()  # row → its line's level

    def mark(self, rows: list[str], level: Severity) -> None:
        for row in rows:
            self.levels[row] = level
            self.levels.move_to_end(row)
        while len(self.levels) > self.rows:
            self.levels.popitem(last=False)

    def highlight(self, text: Text) -> None:
        plain = text.plain
        level = self.levels.get(plain)
        if self.colours is not None and level is not None:
            text.stylize(self.colours.error if level == ERROR else self.colours.warn)
        if self.term:
            lowered, term = plain.lower(), self.term.lower()
            start = lowered.find(term)
            while start >= 0:
                text.stylize("reverse", start, start + len(term))
                start = lowered.find(term, start + len(term))


def keep(entry: LogEntry, term: str, level: int, access: bool = False) -> bool:
    """The filter: lines not matching the search term or below the level are hidden, and
    routine access lines unless `access`."""
    if entry.access and not access:
        return False
    if level and rank(entry.level) <= level:  # warn+ keeps rank 2 and up, error 3
        return False
    return not term or term.lower() in entry.text.lower()


def clock(ts: str) -> str:
    """Docker's `2026-10-02T19:06:27.123456789Z` as `19:06:27.123`; blanks of that width for a
    line without a time, so the text stays in one column."""
    if not ts:
        return " " * 12
    return ts[11:19] + (ts[19:23] if ts[19:20] == "." else "")


def wrap(line: str, width: int) -> list[str]:
    """`line` as rows of at most `width` cells, the rows after its first indented by two: a
    wrapped line reads as one, not as several lines of the log."""
    first, *rest = chop_cells(line.expandtabs(), width) or [""]
    if not rest:
        return [first]
    return [first, *(f"  {row}" for row in chop_cells("".join(rest), max(width - 2, 1)))]


class TailLog(Log):
    """Bounded (max_lines) tail; scrolling up or `f` pauses, and new lines are only counted."""

    BINDINGS = TAIL_BINDINGS
    virtual_size: Reactive[Size] = Reactive(Size(0, 0))
    """Repaint, not layout: Textual lays out the whole screen when a widget's virtual size
    changes (~30-50 ms at 160×48), i.e. at every batch of lines until the buffer is full and at
    each wider line. A tail's size does not depend on its lines (`watch_virtual_size`)."""

    def __init__(self, *, max_lines: int, tag_node: bool, id: str) -> None:
        super().__init__(max_lines=max_lines, highlight=True, id=id)
        self.highlighter = LevelHighlighter(max_lines)
        self.tag_node = tag_node
        self.term = ""
        self.level = 0
        self.access = False  # routine access lines shown
        self.wrapping = False
        self.times = False
        self.following = True
        self.pending = 0
        self._last_seq = -1
        self._source: object = None
        self._entries: Sequence[LogEntry] = ()  # the buffer last fed (an immutable snapshot's)
        self._wrapped_at = 0  # the width the rows were wrapped to

    def watch_virtual_size(self, size: Size) -> None:
        """The scrollbars follow the new size (`Log`'s `overflow: scroll` keeps both shown, so
        nothing moves on the screen); only a tail sized by its content needs a layout."""
        height = self.styles.height
        if height is None or height.is_auto:
            self.refresh(layout=True)
        else:
            self._scroll_update(size)

    def _line(self, entry: LogEntry) -> str:
        text = f"{entry.node}/r{entry.rank} {entry.text}" if self.tag_node else entry.text
        return f"{clock(entry.ts)} {text}" if self.times else text

    def _rows(self, entries: Sequence[LogEntry]) -> list[str]:
        """What the entries that pass the filter show, as rows; the rows of a WARNING or ERROR
        line are marked for the highlighter."""
        rows: list[str] = []
        width = 0
        if self.wrapping:
            self._wrapped_at = width = self._wrap_width()
        for entry in entries:
            if not keep(entry, self.term, self.level, self.access):
                continue
            line = self._line(entry)
            shown = wrap(line, width) if width else [line]
            if entry.level is not None:
                self.highlighter.mark(shown, entry.level)
            rows.extend(shown)
        return rows

    def _wrap_width(self) -> int:
        """The text's width, as if the vertical scrollbar were shown (it comes with the rows)."""
        width = self.size.width
        if not self.show_vertical_scrollbar:
            width -= self.styles.scrollbar_size_vertical
        return max(width, 8)

    def feed(self, source: object, entries: Sequence[LogEntry], colours: Palette) -> None:
        """Show `entries` (a bounded buffer); writes only the ones not shown yet."""
        self.highlighter.colours = colours
        self._entries = entries
        if source != self._source:
            self._source, self._last_seq = source, -1
            self._clear()
        if not entries or entries[-1].seq <= self._last_seq:
            return
        # entries are in seq order: the first unseen one is found by bisection
        fresh = entries[bisect_right(entries, self._last_seq, key=attrgetter("seq")) :]
        self._last_seq = entries[-1].seq
        lines = self._rows(fresh[-self.max_lines :])
        if not lines:
            return
        if not self.following:
            self.pending += len(lines)
        self.write_lines(lines, scroll_end=self.following)

    def refilter(self) -> None:
        """Re-render the whole buffer after the filter, level or a way of showing changed."""
        self._clear()
        self.highlighter.term = self.term
        entries = self._entries
        self._last_seq = entries[-1].seq if entries else -1
        self.write_lines(self._rows(entries)[-self.max_lines :], scroll_end=self.following)

    def _clear(self) -> None:
        """Empty the log. `Log.clear` keeps the scroll offset, and `write_lines` scrolls to the
        end only from the end: a following tail starts again from the top, so the rows written
        next are scrolled to."""
        self.clear()
        self.highlighter.levels.clear()
        if self.following:
            self.scroll_to(0, 0, animate=False, immediate=True)

    def on_resize(self, _: Resize) -> None:
        """A new width rewraps; a following tail keeps its end in view. `Log` scrolls to the end
        only when a write finds it there, and a pane one row shorter (the panes around it grow
        as lanes and ranks appear) leaves it one row above: it would stay there for good."""
        if self.wrapping and self._wrap_width() != self._wrapped_at:
            self.refilter()
        if self.following:
            self.scroll_end(animate=False, x_axis=False)

    def set_following(self, on: bool) -> None:
        self.following = on
        self.auto_scroll = on
        if on:
            self.pending = 0
            self.scroll_end(animate=False)

    def describe(self) -> str:
        """The subtitle: follow/paused (+N new), filter, level and the ways of showing."""
        parts = ["following" if self.following else f"PAUSED +{self.pending} new"]
        if self.term:
            parts.append(f"filter '{self.term}'")
        if self.level:
            parts.append(f"level {LEVELS[self.level]}")
        if self.wrapping:
            parts.append("wrapped")
        if self.times:
            parts.append("times")
        return " · ".join(parts)
