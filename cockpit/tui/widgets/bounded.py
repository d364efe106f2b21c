"""A table whose render caches hold what it can show, not thousands of lines.

Textual's `DataTable` caches 1,000 lines, 1,000 rows and 10,000 cells, keyed by its update count:
after an update every older entry is dead weight, and the Nodes table updates twice a second.
Each cached line is a `Strip` holding seven small caches of its own, ~20 objects the garbage
collector tracks, and every full collection walks them all while the loop (and a key pressed
meanwhile) waits: benchmarks/RESULTS.md, `tui_gc`, has the objects and the collections' times.
"""

from __future__ import annotations

from textual.cache import LRUCache
from textual.events import Resize
from textual.widgets import DataTable
from textual.widgets.data_table import CellType

SPARE_SCREENS = 2  # the lines shown and as many again (scrolled back, or the previous update's)


def lines_kept(height: int) -> int:
    return SPARE_SCREENS * max(height, 1) + 8


def bound(cache: LRUCache[object, object], size: int) -> None:
    """`LRUCache` evicts one entry per insertion: shrinking it takes a clear (a resize repaints
    every line anyway)."""
    if cache.maxsize != size:
        cache.clear()
        cache.maxsize = size


class BoundedTable(DataTable[CellType]):
    """A row-cursor `DataTable` whose caches are sized for its height and `columns` at most."""

    def __init__(self, *, columns: int, id: str, zebra_stripes: bool = False) -> None:
        super().__init__(cursor_type="row", zebra_stripes=zebra_stripes, id=id)
        self._most_columns = columns
        self._bound(0)

    def _bound(self, height: int) -> None:
        lines = lines_kept(height)
        for cache in (self._line_cache, self._row_render_cache, self._row_renderable_cache):
            bound(cache, lines)  # type: ignore[arg-type]
        bound(self._cell_render_cache, lines * self._most_columns)  # type: ignore[arg-type]

    def on_resize(self, event: Resize) -> None:
        self._bound(event.size.height)
