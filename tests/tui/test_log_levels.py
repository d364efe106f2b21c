"""The Log pane's colours and its level filter agree, line for line, on real lines: red is what
"error" shows (torch's out-of-memory error was red yet hidden by it), yellow what "warn+" adds."""

from __future__ import annotations

from rich.text import Text

from cockpit.tui.state import RankLines, Store
from cockpit.tui.state.views import LogSource
from cockpit.tui.widgets.palette import Palette
from cockpit.tui.widgets.tail import LEVELS, TailLog, keep
from tests.tui import scene
from tests.tui.scene import FIXTURES

COLOURS = Palette(ok="green", warn="yellow", error="red", accent="blue", muted="grey50")
OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total "
    "capacity of 119.70 GiB of which 12.31 GiB is free."
)
NCCL_WARN = (
    "dgx3:36754:36801 [0] proxy.cc:1716 NCCL WARN [Service thread] Error encountered progressing "
    "operation=Connect, res=3, closing connection"
)


def lines() -> tuple[str, ...]:
    served = (FIXTURES / "vllm-0.32-cpu" / "serve.log").read_text().splitlines()[:40]
    failed = (FIXTURES / "vllm_boot_kv_oom.log").read_text().splitlines()
    return (*served, *failed, OOM, NCCL_WARN)


def paint(tail: TailLog, row: str) -> str | None:
    text = Text(row)
    tail.highlighter.highlight(text)
    return str(text.spans[0].style) if text.spans else None


def test_red_is_what_the_error_filter_shows_and_yellow_what_warn_adds() -> None:
    store = Store(scene.inventory())
    store.apply(RankLines("dgx5", scene.LANE, scene.CLUSTER, 0, lines()))
    source = LogSource(f"{scene.LANE}@{scene.CLUSTER}", "dgx5", 0)
    entries = store.snapshot(scene.T0).logs[source]
    tail = TailLog(max_lines=500, tag_node=True, id="log")
    tail.highlighter.colours = COLOURS
    tail.access = True
    rows = dict(zip(tail._rows(entries), entries, strict=True))  # one row a line: no wrapping
    red = {row for row in rows if paint(tail, row) == "red"}
    yellow = {row for row in rows if paint(tail, row) == "yellow"}
    error, warn = LEVELS.index("error"), LEVELS.index("warn+")
    assert red == {row for row, entry in rows.items() if keep(entry, "", error)}
    assert red | yellow == {row for row, entry in rows.items() if keep(entry, "", warn)}
    assert f"dgx5/r0 {OOM}" in red and f"dgx5/r0 {NCCL_WARN}" in yellow
    assert len(red) == 8  # the 7 lines of the kv_oom fixture's tracebacks, and the OOM
    assert len(yellow) == 13  # the 12 warnings of serve.log's first 40 lines, and the NCCL WARN


def test_a_wrapped_error_line_is_red_on_every_row() -> None:
    tail = TailLog(max_lines=50, tag_node=False, id="log")
    tail.highlighter.colours = COLOURS
    tail.wrapping = True
    store = Store(scene.inventory())
    store.apply(RankLines("dgx5", scene.LANE, scene.CLUSTER, 0, (OOM, "INFO:     Shutting down")))
    entries = store.snapshot(scene.T0).logs[LogSource(f"{scene.LANE}@{scene.CLUSTER}", "dgx5", 0)]
    tail._wrap_width = lambda: 40  # type: ignore[method-assign]  # no terminal: a fixed width
    rows = tail._rows(entries)
    assert len(rows) > 3 and [paint(tail, row) for row in rows] == [
        *(["red"] * (len(rows) - 1)),
        None,
    ]
