"""The Log pane for people: access lines folded (`a`), wrap (`W`), a page a key (→/←), times
(`T`), save (`ctrl+s`), on the recorded scene plus a served head's lines."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.screen import Screen

from cockpit.tui.app import CockpitApp
from cockpit.tui.keymap import TAIL_BINDINGS
from cockpit.tui.logfile import log_path, log_text
from cockpit.tui.screens.main import MainScreen
from cockpit.tui.state import RankLines
from cockpit.tui.state.views import LogEntry, LogSource
from cockpit.tui.widgets.logs import LogPane
from cockpit.tui.widgets.nodes import NodesPane
from cockpit.tui.widgets.tail import TailLog, clock, keep, wrap
from tests.tui import scene
from tests.tui.calls import count_calls

SIZE = (160, 48)
HEAD = LogSource(f"{scene.LANE}@{scene.CLUSTER}", "dgx5", 0)
STAMP = "2026-10-02T19:06:27.123456789Z"
SCRAPE = 'INFO:     127.0.0.1:41000 - "GET /metrics HTTP/1.1" 200 OK'
BENCH = '(APIServer pid=1) INFO:     127.0.0.1:41002 - "POST /v1/completions HTTP/1.1" 200 OK'
STATS = (
    "(APIServer pid=1) INFO 10-02 19:06:27 [loggers.py:257] Engine 000: Avg prompt throughput: "
    "5698.1 tokens/s, Avg generation throughput: 19.9 tokens/s, Running: 1 reqs, Waiting: 0 reqs, "
    "GPU KV cache usage: 2.2%, Prefix cache hit rate: 0.0%"
)
SERVED = (SCRAPE, BENCH, BENCH, STATS, SCRAPE, BENCH)  # 5 access lines around one stats line
SCENE_ACCESS = 1  # the recorded boot log's own `GET /health` line


def served_app(make_app: Callable[..., CockpitApp], **kwargs: object) -> CockpitApp:
    """The scene, whose head then served: its stamped lines, mostly access lines."""
    app = make_app(**kwargs)
    lines = tuple(f"{STAMP} {line}" for line in SERVED)
    app.store.apply(RankLines("dgx5", scene.LANE, scene.CLUSTER, 0, lines, scene.T0))
    return app


def parts(app: CockpitApp) -> tuple[MainScreen, LogPane, TailLog]:
    screen = app.screen_stack[1]
    assert isinstance(screen, MainScreen)
    log = screen.query_one(LogPane)
    assert log.source == HEAD
    return screen, log, log.query_one(TailLog)


def notices(app: CockpitApp) -> list[str]:
    return [n.message for n in app._notifications]


async def test_access_lines_are_folded_and_a_shows_them(
    make_app: Callable[..., CockpitApp],
) -> None:
    app = served_app(make_app)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        _, log, tail = parts(app)
        hidden = SCENE_ACCESS + 5
        assert (
            str(log.border_title) == f"Log dgx5/r0 · {hidden} access lines hidden (a) · {HEAD.lane}"
        )
        assert STATS in tail.lines and not any('HTTP/1.1" 200' in line for line in tail.lines)
        folded = tail.line_count
        await pilot.press("a")
        assert tail.line_count == folded + hidden
        assert tail.lines[-6:] == list(SERVED)  # in their place, in their order
        assert f" · {hidden} access lines shown (a) · " in str(log.border_title)
        assert "access lines shown (6 in the log)" in notices(app)
        await pilot.press("a")
        assert tail.line_count == folded and "hidden (a)" in str(log.border_title)


async def test_the_title_names_the_key_the_keymap_gives(
    make_app: Callable[..., CockpitApp],
) -> None:
    app = served_app(make_app, keymap={"access": "ctrl+a", "log_page_right": "ctrl+right"})
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        _, log, tail = parts(app)
        assert "hidden (ctrl+a)" in str(log.border_title)
        await pilot.press("ctrl+a")
        assert tail.access and "shown (ctrl+a)" in str(log.border_title)
        assert not any("unknown key id" in m for m in notices(app))  # a log key is a known id


async def test_w_wraps_long_lines_to_the_pane_and_back(
    make_app: Callable[..., CockpitApp],
) -> None:
    app = served_app(make_app)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        _, log, tail = parts(app)
        assert STATS in tail.lines  # one row, cut at the pane's edge
        width = tail.size.width
        assert len(STATS) > width
        await pilot.press("W")
        assert STATS not in tail.lines
        assert max(len(line) for line in tail.lines) <= width
        rows = wrap(STATS, tail._wrapped_at)
        assert len(rows) > 1 and tail.lines[-len(rows) :] == rows  # rows that read as the line
        assert "wrapped" in str(log.border_subtitle)
        await pilot.resize_terminal(200, 48)  # a wider pane: the buffer is wrapped again
        await pilot.pause(0.1)
        assert tail.size.width > width
        assert max(len(line) for line in tail.lines) > width
        await pilot.press("W")
        assert STATS in tail.lines and "wrapped" not in str(log.border_subtitle)
        assert "log lines cut (→/← by a page)" in notices(app)


async def settled(pilot: Pilot) -> None:
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()


async def test_right_and_left_scroll_a_cut_line_a_page_at_a_time(
    make_app: Callable[..., CockpitApp],
) -> None:
    app = served_app(make_app)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        _, _, tail = parts(app)
        tail.focus()
        await pilot.pause()
        page = tail.scrollable_content_region.width
        await pilot.press("right")
        await settled(pilot)
        assert tail.scroll_x == page  # not one column
        await pilot.press("left")
        await settled(pilot)
        assert tail.scroll_x == 0


async def test_t_shows_each_lines_time(make_app: Callable[..., CockpitApp]) -> None:
    app = served_app(make_app)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        _, log, tail = parts(app)
        assert tail.lines[-1] == STATS
        await pilot.press("T")
        assert tail.lines[-1] == f"19:06:27.123 {STATS}"
        assert tail.lines[0].startswith(" " * 12 + " ")  # the recorded log had no times
        assert "times" in str(log.border_subtitle) and "log times shown" in notices(app)
        await pilot.press("T")
        assert tail.lines[-1] == STATS


async def test_ctrl_s_saves_the_whole_buffer_and_says_where(
    make_app: Callable[..., CockpitApp], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    app = served_app(make_app)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen, _, _ = parts(app)
        await pilot.press("ctrl+s")
        await app.workers.wait_for_complete()
        await pilot.pause()
        (saved,) = (tmp_path / "logs").iterdir()
        entries = screen.snap.logs[HEAD] if screen.snap else ()
        assert saved.read_text() == log_text(entries)
        text = saved.read_text().splitlines()
        assert text[-6:] == [f"{STAMP} {line}" for line in SERVED]  # folded lines too, timed
        assert f"saved {len(entries)} lines of dgx5/r0 to {saved}" in notices(app)


async def test_ctrl_s_in_a_browser_is_a_download_and_writes_nothing_on_the_host(
    make_app: Callable[..., CockpitApp], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(CockpitApp, "is_web", property(lambda app: True))  # `cockpit serve`
    delivered: list[tuple[str, str | None]] = []
    monkeypatch.setattr(
        CockpitApp,
        "deliver_text",
        lambda app, file, save_filename=None: delivered.append((file.read(), save_filename)),
    )
    app = served_app(make_app)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen, _, _ = parts(app)
        await pilot.press("ctrl+s")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert list(tmp_path.iterdir()) == []
        entries = screen.snap.logs[HEAD] if screen.snap else ()
        ((text, name),) = delivered
        assert text == log_text(entries) and name and name.endswith("_dgx5-r0.log")
        assert f"{len(entries)} lines sent to the browser as {name}" in notices(app)


def test_a_saved_log_is_named_by_time_lane_and_rank() -> None:
    from datetime import UTC, datetime

    path = log_path(HEAD, datetime(2026, 10, 2, 19, 6, 27, tzinfo=UTC))
    assert path == Path(f"logs/2026-10-02_190627_{scene.LANE}@{scene.CLUSTER}_dgx5-r0.log")
    entries = [LogEntry(1, "dgx5", 0, "bare"), LogEntry(2, "dgx5", 0, "timed", None, STAMP)]
    assert log_text(entries) == f"bare\n{STAMP} timed\n"


def test_the_pure_parts_of_the_tail() -> None:
    assert clock(STAMP) == "19:06:27.123" and clock("2026-10-02T19:06:27Z") == "19:06:27"
    assert clock("") == " " * 12
    assert wrap("abcdefghij", 4) == ["abcd", "  ef", "  gh", "  ij"] and wrap("", 4) == [""]
    assert wrap("abcd", 4) == ["abcd"] and wrap("a\tb", 10) == ["a       b"]
    assert wrap("日本語のログ", 4) == ["日本", "  語", "  の", "  ロ", "  グ"]  # cells, not chars
    access = LogEntry(1, "dgx5", 0, SCRAPE, access=True)
    assert not keep(access, "", 0) and keep(access, "", 0, access=True)
    assert not keep(access, "engine", 0, access=True)  # the search still applies


async def test_the_help_lists_the_log_keys(make_app: Callable[..., CockpitApp]) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen_stack[1]
        assert isinstance(screen, MainScreen)
        described = {desc for _, desc, _ in screen.key_rows()}
        assert {b.tooltip for b in TAIL_BINDINGS} <= described


async def test_a_following_log_shows_its_end_after_a_way_of_showing_changed(
    make_app: Callable[..., CockpitApp],
) -> None:
    """Seen in the demo: `a` rewrote the buffer but the view stayed where it was, far above the
    newest line (Textual's `Log.clear` keeps the scroll offset, so the rows written after it
    were not scrolled to)."""
    app = make_app()
    lines = tuple(f"{STAMP} {line}" for line in SERVED * 40)
    app.store.apply(RankLines("dgx5", scene.LANE, scene.CLUSTER, 0, lines, scene.T0))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        _, _, tail = parts(app)
        for key in ("a", "T", "W", "a", "W", "T"):
            await pilot.press(key)
            await pilot.pause()
            assert tail.following and tail.max_scroll_y > 0
            assert tail.is_vertical_scroll_end, (key, tail.scroll_y, tail.max_scroll_y)
        for _ in range(2):  # another rank's log, then this one again: each from its end
            await pilot.press("n")
            await pilot.pause()
            assert tail.is_vertical_scroll_end, (tail.scroll_y, tail.max_scroll_y)
        assert tail.max_scroll_y > 0 and parts(app)[1].source == HEAD


async def test_a_following_log_keeps_its_end_in_view_as_a_boot_streams_in(
    make_app: Callable[..., CockpitApp],
) -> None:
    """Seen in the demo: the head's boot came in batches, the pane lost a row on the way (the
    panes around it grow as ranks appear) and the log stayed above its end for good, showing
    the boot while the lane served."""
    app = make_app(with_scene=False)
    app.store.apply_all(scene.node_samples(app.store.inventory))
    boot = (scene.FIXTURES / "vllm_boot_spark_first.log").read_text().splitlines()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(1.2)  # the later panes are laid out
        batches = [boot[i : i + 5] for i in range(0, len(boot), 5)] + [[SCRAPE, STATS]] * 5
        for batch in batches:
            lines = tuple(f"{STAMP} {line}" for line in batch)
            app.store.apply(RankLines("dgx5", scene.LANE, scene.CLUSTER, 0, lines, scene.T0))
            await pilot.pause(0.06)
        _, _, tail = parts(app)
        assert tail.following and tail.max_scroll_y > 0
        assert tail.is_vertical_scroll_end, (tail.scroll_y, tail.max_scroll_y)
        assert tail.lines[-1] == STATS


async def test_a_streaming_log_lays_nothing_out(
    make_app: Callable[..., CockpitApp], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each batch of lines grew the tail's virtual size, and Textual lays the whole screen out
    for that (~30-50 ms at 160×48): 96 layouts in 10 s of a lane streaming 400 lines a second.
    A tail's size does not depend on its lines, so a batch repaints it and moves its
    scrollbar."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(1.2)  # the later panes are laid out
        screen, _, tail = parts(app)
        layouts = count_calls(monkeypatch, Screen, "_refresh_layout")
        before = tail.line_count
        for k in range(60):
            lines = tuple(f"{STAMP} INFO line {k}.{j}" for j in range(20))
            app.store.apply(RankLines("dgx5", scene.LANE, scene.CLUSTER, 0, lines, scene.T0))
            await pilot.pause(0.03)
        await pilot.pause(0.2)
        assert tail.line_count == before + 1200 and tail.lines[-1] == "INFO line 59.19"
        assert tail.is_vertical_scroll_end and tail.following
        assert tail.vertical_scrollbar.window_virtual_size == tail.virtual_size.height
        assert layouts.count == 0
        assert screen.query_one(NodesPane).size.height  # the screen is intact
