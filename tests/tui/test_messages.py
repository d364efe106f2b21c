"""Typed messages and the repaints they cause: a queued message whose input only the latest of its
kind matters for is coalesced (a lane's older scrape, a node's older poll), log lines and
operation events never are; the screen repaints only the panes reading what a message changed,
and nothing at all while nothing changes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable

from cockpit.events import Progress
from cockpit.telemetry.metrics import EngineMetrics
from cockpit.tui.app import CockpitApp
from cockpit.tui.messages import (
    EngineScraped,
    LogLines,
    NodePolled,
    OpFinished,
    OpProgress,
    message_for,
)
from cockpit.tui.screens.frames import HELD_EVERY_S
from cockpit.tui.screens.main import MainScreen
from cockpit.tui.state.inputs import (
    EngineSampled,
    NodeLost,
    NodeSampled,
    OpEnded,
    OpUpdate,
    RankLines,
    StoreInput,
)
from cockpit.tui.state.nodes import STALE_AFTER_S
from cockpit.tui.widgets.activity import BenchPane, OpsPane
from cockpit.tui.widgets.engine import KvPane, ThroughputPane
from cockpit.tui.widgets.lanes import LanesPane
from cockpit.tui.widgets.logs import LogPane, NcclPane
from cockpit.tui.widgets.nodes import NodesPane
from cockpit.tui.widgets.pane import Pane
from tests.tui import scene
from tests.tui.calls import count_calls

SIZE = (160, 48)
SYNC_PROGRESS = Progress(op="sync", lane="qwen3-0.6b-2x", cluster="2nodes-dac", ts=scene.T0,
                         step="load on dgx1", done=7.1, total=14.2, unit="GiB")  # fmt: skip


@asynccontextmanager
async def revealed(
    app: CockpitApp, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Pilot[None], MainScreen]]:
    """The app at SIZE once its later panes are revealed, with no age tick: nothing repaints
    but what a test sends."""
    monkeypatch.setattr(app.store, "next_change", lambda now: None)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(1.3)
        screen = app.screen
        assert isinstance(screen, MainScreen) and not screen.has_class("-starting")
        yield pilot, screen


def scrape(at: float, lane: str = scene.LANE) -> EngineSampled:
    return EngineSampled(lane, scene.CLUSTER, EngineMetrics(at=at, requests_running=1.0))


def next_scrape() -> EngineSampled:
    """The scene's last scrape of its lane, 2 s later with a few more tokens."""
    last = scene.engine_samples()[-1]
    assert isinstance(last, EngineSampled)
    m = last.metrics
    more = replace(m, at=m.at + 2, generation_tokens=(m.generation_tokens or 0) + 150)
    return replace(last, metrics=more)


def lines(text: str, rank: int = 0) -> RankLines:
    return RankLines("dgx5", scene.LANE, scene.CLUSTER, rank, (text,), scene.T0)


def sample(node: str = "dgx1", at: float = scene.T0) -> NodeSampled:
    last = [
        s
        for s in scene.node_samples(scene.inventory())
        if isinstance(s, NodeSampled) and s.node == node
    ][-1]
    return replace(last, at=at)


def test_which_message_replaces_which() -> None:
    """`older.can_replace(newer)`: Textual drops `older` for `newer` queued right behind it."""
    older = EngineScraped(scrape(scene.T0))
    assert older.can_replace(EngineScraped(scrape(scene.T0 + 2)))
    assert not older.can_replace(EngineScraped(scrape(scene.T0 + 2, lane="qwen3-0.6b-2x")))
    polled = NodePolled(sample())
    assert polled.can_replace(NodePolled(sample(at=scene.T0 + 1)))
    assert not polled.can_replace(NodePolled(sample("dgx2")))
    # a failed poll only marks the node: it never stands for the sample (or failure) before it
    assert not polled.can_replace(NodePolled(NodeLost("dgx1", scene.T0 + 1, "timed out")))
    lost = NodePolled(NodeLost("dgx1", scene.T0, "timed out"))
    assert not lost.can_replace(NodePolled(NodeLost("dgx1", scene.T0 + 1, "timed out")))
    assert lost.can_replace(NodePolled(sample(at=scene.T0 + 1)))
    assert not LogLines(lines("a")).can_replace(LogLines(lines("b")))
    progress = Progress(op="sync", lane="l", cluster="c", ts=1.0, step="load", done=1, total=2)
    assert not OpProgress(1, progress).can_replace(OpProgress(1, progress))
    assert not OpFinished(1, "done").can_replace(OpFinished(1, "done"))
    assert not older.can_replace(LogLines(lines("a")))


def test_every_input_has_its_message() -> None:
    items: list[StoreInput] = [
        sample(),
        NodeLost("dgx1", 1.0, "x"),
        scrape(1.0),
        lines("a"),
        OpUpdate(3, Progress(op="sync", lane="l", cluster="c", ts=1.0, step="s")),
        OpEnded(3, "why"),
    ]
    assert [message_for(item).input for item in items] == items


async def test_the_pump_drops_a_queued_older_scrape_and_never_log_lines(
    make_app: Callable[..., CockpitApp], monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app()
    applied: list[StoreInput] = []
    apply = app.store.apply

    def recording(item: StoreInput):  # type: ignore[no-untyped-def]
        applied.append(item)
        return apply(item)

    monkeypatch.setattr(app.store, "apply", recording)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        applied.clear()
        older, newer = scrape(scene.T0 + 1), scrape(scene.T0 + 3)
        first, second = sample(at=scene.T0 + 1), sample(at=scene.T0 + 2)
        posted = [older, newer, lines("one"), lines("two"), first, second, lines("three")]
        for item in posted:  # queued together, before the app handles any of them
            app.post_message(message_for(item))
        await pilot.pause()
        assert applied == [newer, lines("one"), lines("two"), second, lines("three")]


class Quiet:
    """A feed that never has anything to say."""

    name = "quiet"

    async def batches(self) -> AsyncIterator[Sequence[StoreInput]]:
        await asyncio.Event().wait()
        yield []


def shows_by_repaint(screen: MainScreen) -> dict[str, dict[int, int]]:
    """Each pane's `show` calls from now on, by pane id and by repaint (each repaint takes one
    snapshot: the first one from now on is 1)."""
    store = screen.cockpit.store
    repaints = 0
    snapshot = store.snapshot

    def counting_snapshot(now: float):  # type: ignore[no-untyped-def]
        nonlocal repaints
        repaints += 1
        return snapshot(now)

    store.snapshot = counting_snapshot  # type: ignore[method-assign]
    shows: dict[str, dict[int, int]] = {}
    for pane in screen.query(Pane):
        shows[pane.id or ""] = {}

        def counting(snap, ctx, pane=pane, show=pane.show):  # type: ignore[no-untyped-def]
            by_repaint = shows[pane.id or ""]
            by_repaint[repaints] = by_repaint.get(repaints, 0) + 1
            show(snap, ctx)

        pane.show = counting  # type: ignore[method-assign]
    return shows


async def test_nothing_repaints_while_nothing_changes(
    make_app: Callable[..., CockpitApp],
) -> None:
    """Every node heard from just now (the wall clock's now), no operation, no history: no
    timer fires, no snapshot is taken, no pane repaints (the 20 Hz poll this replaced looked at
    the store 20 times a second, and took a snapshot for the panes every second)."""
    app = make_app(with_scene=False, feeds=[Quiet()], clock=time.time)
    heard = time.time()
    app.store.apply_all(
        replace(s, at=heard) for s in scene.node_samples(app.store.inventory)
        if isinstance(s, NodeSampled)
    )  # fmt: skip
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(1.3)  # the first useful frame, the later panes revealed
        screen = app.screen
        assert isinstance(screen, MainScreen) and app.first_useful_frame is not None
        shows = shows_by_repaint(screen)
        await pilot.pause(1.5)
        assert all(not by_repaint for by_repaint in shows.values()), shows  # nor any snapshot
        # the only timer armed: the age tick, for when the first node turns STALE
        assert screen.frames._frame is None
        assert screen.frames._tick is not None
        assert screen.frames._tick_at == pytest.approx(heard + STALE_AFTER_S)

        app.post_message(NodePolled(sample("dgx1", at=heard)))  # a change: one repaint
        await pilot.pause(0.3)
        assert {pane: by_repaint for pane, by_repaint in shows.items() if by_repaint} == {
            "nodes": {1: 1}
        }


@pytest.mark.parametrize(
    ("item", "painted"),
    [
        (lines("an INFO line of the head"), {"log"}),
        (lines("NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0"), {"log", "nccl"}),
        (next_scrape(), {"kv", "throughput", "lanes"}),
        (sample("dgx1", at=scene.T0 + 1), {"nodes"}),  # the same containers: its row only
        (replace(sample("dgx6", at=scene.T0 + 1), ranks=()), None),
        (OpUpdate(scene.SYNC_RUN, SYNC_PROGRESS), {"ops", "lanes", "kv", "throughput"}),
    ],
    ids=["log-line", "nccl-line", "scrape", "node-poll", "node-lists-other-containers", "op-step"],
)
async def test_a_message_repaints_only_the_panes_reading_what_it_changed(
    make_app: Callable[..., CockpitApp],
    monkeypatch: pytest.MonkeyPatch,
    item: StoreInput,
    painted: set[str] | None,
) -> None:
    app = make_app()
    async with revealed(app, monkeypatch) as (pilot, screen):
        shows = shows_by_repaint(screen)
        app.post_message(message_for(item))
        await pilot.pause(0.3)
        # the repaint the message causes (a pane whose content changed its height then has the
        # panes laid out again, and every pane refits: `Pane.Resized`, as before)
        shown = {pane for pane, by_repaint in shows.items() if by_repaint.get(1)}
        if painted is None:  # a rank of the lane left dgx6: its lane, logs, engine follow
            assert {"nodes", "lanes", "log", "kv", "throughput", "nccl"} <= shown
            assert not shown & {"ops", "bench"}
        else:
            assert shown == painted
        assert all(n <= 1 for by_repaint in shows.values() for n in by_repaint.values())


async def test_a_stale_nodes_age_moves_with_the_clock_alone(
    make_app: Callable[..., CockpitApp],
) -> None:
    """No message comes, the clock moves: the age tick repaints the Nodes pane's STALE age."""
    now = [scene.T0]
    app = make_app(feeds=[Quiet()], clock=lambda: now[0])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.3)
        pane = app.screen.query_one(NodesPane)
        table = pane.query_one("DataTable")

        def link() -> str:
            return str(table.get_row("dgx3")[1])  # type: ignore[attr-defined]

        assert link() == "STALE 1m08s"
        now[0] += 5
        await pilot.pause(1.3)
        assert link() == "STALE 1m13s"


def test_the_panes_name_what_they_read() -> None:
    panes = (LanesPane, NodesPane, NcclPane, LogPane, OpsPane, KvPane, ThroughputPane, BenchPane)
    assert {pane: {p.value for p in pane.READS} for pane in panes} == {
        LanesPane: {"lanes"},
        NodesPane: {"nodes"},
        NcclPane: {"nccl"},
        LogPane: {"logs"},
        OpsPane: {"ops"},
        KvPane: {"engines", "lanes"},
        ThroughputPane: {"engines", "lanes"},
        BenchPane: {"bench"},
    }


async def test_new_figures_that_change_no_height_lay_nothing_out(
    make_app: Callable[..., CockpitApp],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A layout is the whole screen's (~50 ms at 160×48, then every pane painted again): a
    lane's next scrape (the KV and Engine bodies' figures on the same lines) and a node's sample
    with a narrower figure (a GPU at 100 % idle again: the Nodes columns keep their width)
    repaint their panes and lay nothing out. Each of them did, at every scrape and at every
    sample that moved a column's widest cell."""
    app = make_app()
    async with revealed(app, monkeypatch) as (pilot, screen):
        scraped = next_scrape()  # the scene's lane's first rates after it: the body's height
        app.post_message(message_for(scraped))
        busy = sample("dgx8", at=scene.T0 + 1)
        assert busy.gpu is not None
        app.post_message(NodePolled(replace(busy, gpu=replace(busy.gpu, utilization_pct=100.0))))
        await pilot.pause(0.3 + HELD_EVERY_S)  # the gpu column's widest cell now: "100%"
        m = scraped.metrics
        more = replace(m, at=m.at + 2, generation_tokens=(m.generation_tokens or 0) + 150)
        layouts = count_calls(monkeypatch, screen, "_refresh_layout")
        shows = shows_by_repaint(screen)
        narrower = replace(busy, at=scene.T0 + 2, gpu=replace(busy.gpu, utilization_pct=5.0))
        app.post_message(message_for(replace(scraped, metrics=more)))
        app.post_message(NodePolled(narrower))
        await pilot.pause(0.3 + HELD_EVERY_S)  # the Nodes pane's repaint may be held that long
        assert {"kv", "throughput", "nodes"} <= {p for p, by in shows.items() if by}
        table = screen.query_one(NodesPane).query_one(DataTable)
        assert "5%" in str(table.get_row("dgx8"))
        assert layouts.count == 0


async def test_the_nodes_pane_repaints_at_most_twice_a_second_and_loses_no_sample(
    make_app: Callable[..., CockpitApp],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At 128 nodes a GPU line lands in nearly every frame: the Nodes pane repaints for the
    store at most every HELD_EVERY_S, and then with the latest samples."""
    app = make_app()
    async with revealed(app, monkeypatch) as (pilot, screen):
        nodes = screen.query_one(NodesPane)
        painted: list[float] = []
        show = nodes.show

        def timed(snap, ctx):  # type: ignore[no-untyped-def]
            painted.append(time.monotonic())
            show(snap, ctx)

        monkeypatch.setattr(nodes, "show", timed)

        async def repaints(count: int) -> None:
            async with asyncio.timeout(10):
                while len(painted) < count:
                    await pilot.pause(0.02)

        app.post_message(NodePolled(sample("dgx1", at=scene.T0 + 1)))
        await repaints(1)  # the first change since a while: at the next frame
        busy = sample("dgx8", at=scene.T0 + 2)
        assert busy.gpu is not None
        app.post_message(NodePolled(replace(busy, gpu=replace(busy.gpu, utilization_pct=3.0))))
        await repaints(2)
        assert painted[1] - painted[0] >= 0.95 * HELD_EVERY_S
        assert "3%" in str(nodes.query_one(DataTable).get_row("dgx8"))


async def test_the_nodes_pane_stays_current_behind_a_maximised_pane_so_the_restore_rebuilds_nothing(
    make_app: Callable[..., CockpitApp],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Hidden panes are not repainted while another is maximised; restored after a while at 128
    nodes, the Nodes pane rebuilt every row in the restore's frame (11-22 ms a press, py-spy).
    It is kept current behind the maximised pane, at its width in the layout (a hidden table
    has none: fitted to zero columns it took the host's, then dropped them at the restore)."""
    app = make_app()
    async with revealed(app, monkeypatch) as (pilot, screen):
        table = screen.query_one(NodesPane).query_one(DataTable)
        columns = len(table.columns)
        screen.query_one("#lanes-table").focus()
        await pilot.press("m")
        await pilot.pause(0.3)
        assert isinstance(screen.maximized, LanesPane)
        busy = sample("dgx8", at=scene.T0 + 1)
        assert busy.gpu is not None
        app.post_message(NodePolled(replace(busy, gpu=replace(busy.gpu, utilization_pct=77.0))))
        await pilot.pause(0.3 + HELD_EVERY_S)
        assert "77%" in str(table.get_row("dgx8"))  # behind the maximised Lanes pane
        assert len(table.columns) == columns
        rebuilt = count_calls(monkeypatch, table, "clear")
        updated = count_calls(monkeypatch, table, "update_cell")
        await pilot.press("m")
        await pilot.pause(0.3)
        assert screen.maximized is None
        assert rebuilt.count == 0 and updated.count == 0
        assert len(table.columns) == columns
