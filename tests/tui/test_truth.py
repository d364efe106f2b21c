"""The cockpit shows what runs, not what it last did (issue 19), with Pilot on the recorded scene:
scripted operations stand in for the fleet's, a manual feed for its facts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace

import pytest
from rich.text import Text
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import DataTable

from cockpit.events import (
    Finished,
    Notice,
    OpEvent,
    Progress,
    Severity,
    StepFinished,
    StepStarted,
)
from cockpit.tui.app import CockpitApp
from cockpit.tui.operations import LaneTarget
from cockpit.tui.state import NodeLost, NodeSampled, RankLines, RankOnNode, StoreInput
from cockpit.tui.state.views import LanePhase, LogSource
from cockpit.tui.widgets.engine import Body, KvPane, ThroughputPane
from cockpit.tui.widgets.lanes import LanesPane
from cockpit.tui.widgets.logs import LogPane, NcclPane
from cockpit.tui.widgets.tail import TailLog
from tests.tui import scene
from tests.tui.scripted_ops import ScriptedOperations
from tests.tui.test_keys import main, select_lane
from tests.tui.waits import until

SIZE = (160, 48)
SERVING = f"{scene.LANE}@{scene.CLUSTER}"
QWEN, DAC = "qwen3-0.6b-2x", "2nodes-dac"
QWEN_KEY = f"{QWEN}@{DAC}"


class ManualFeed:
    """Facts the test pushes, and the containers the app asked it to follow."""

    name = "manual"

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Sequence[StoreInput]] = asyncio.Queue()
        self.followed: list[tuple[str, str, RankOnNode]] = []
        self.refreshed: list[str] = []  # nodes the app asked to look at again

    def push(self, *inputs: StoreInput) -> None:
        self.queue.put_nowait(inputs)

    def follow(self, node: str, name: str, rank: RankOnNode) -> None:
        self.followed.append((node, name, rank))

    def refresh(self, node: str) -> None:
        self.refreshed.append(node)

    async def batches(self) -> AsyncIterator[Sequence[StoreInput]]:
        while True:
            yield await self.queue.get()


def lane_state(app: CockpitApp, key: str) -> str:
    """The Lanes row's state cell as painted."""
    table = app.screen.query_one(LanesPane).table
    cell = table.get_row(key)[2]
    return cell.plain if isinstance(cell, Text) else str(cell)


def painted(widget: Widget) -> str:
    """The widget's lines as they are painted (wrapped and clipped to its size)."""
    strips = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
    return "\n".join(strip.text.rstrip() for strip in strips).strip("\n")


def ops_text(app: CockpitApp) -> str:
    return painted(app.screen.query_one("#ops-body"))


async def settle(pilot: Pilot, seconds: float = 0.3) -> None:
    await pilot.pause(seconds)


async def operations_done(app: CockpitApp) -> None:
    """Every operation's worker ended (a feed's runs on)."""
    await app.workers.wait_for_complete([w for w in app.workers if w.group == "ops"])


def where(target: LaneTarget) -> dict[str, str]:
    return {"lane": target.lane, "cluster": target.cluster}


def refusal(target: LaneTarget) -> list[OpEvent]:
    """A launch that locks, checks, and is refused: nothing changes on a node."""
    kw = {"op": "launch", "lane": target.lane, "cluster": target.cluster}
    return [
        StepStarted(step="lock", **kw),
        StepFinished(step="lock", **kw),
        StepStarted(step="preflight", **kw),
        Notice(severity=Severity.ERROR, message="lane already runs on dgx5-8", **kw),
        StepFinished(step="preflight", ok=False, detail="1 check(s) failed", **kw),
        Finished.refused("launch", "preflight refused: lane already runs", **where(target)),
    ]


async def test_a_refused_launch_on_a_serving_lane_leaves_it_serving(
    make_app: Callable[..., CockpitApp],
) -> None:
    ops = ScriptedOperations(step_s=0.3, events={"launch": refusal})
    app = make_app(operations=ops)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_lane(app, SERVING)
        await pilot.press("l", "y")
        await until(pilot, "the preflight", lambda: "preflight" in ops_text(app))
        assert lane_state(app, SERVING) == "serving"  # checks change nothing on the row
        await operations_done(app)
        await settle(pilot)
        assert lane_state(app, SERVING) == "serving"
        assert not [op for op in main(app).snap.ops if op.op == "launch" and op.running]
        assert "launch" not in ops_text(app).replace("✔ launch", "")  # a refusal changes nothing
        # on screen (the scene's earlier launch stays listed)...
        notices = [n.message for n in app._notifications]
        assert "launch refused: preflight refused: lane already runs" in notices  # ...but this


async def test_a_refused_launch_then_a_stop_reads_stopped(
    make_app: Callable[..., CockpitApp],
) -> None:
    ops = ScriptedOperations(events={"launch": refusal})
    app = make_app(operations=ops)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_lane(app, QWEN_KEY)
        await pilot.press("l", "y")
        await operations_done(app)
        await settle(pilot)
        assert lane_state(app, QWEN_KEY) == "syncing load on dgx1 44%"  # the scene's sync runs
        await select_lane(app, "qwen3-0.6b-2x@dgx56-switch")
        await pilot.press("l", "y")
        await operations_done(app)
        await settle(pilot)
        assert lane_state(app, "qwen3-0.6b-2x@dgx56-switch") == "stopped"
        await pilot.press("s", "y")
        await operations_done(app)
        await settle(pilot)
        assert lane_state(app, "qwen3-0.6b-2x@dgx56-switch") == "stopped"


def switch_with_sync(target: LaneTarget) -> list[OpEvent]:
    """A switch as `cockpit.ops.switch` yields it: its nested sync says op "sync" and never
    sends a Finished of its own; the switch's launch says op "switch"."""
    sw = {"op": "switch", "lane": target.lane, "cluster": target.cluster}
    sy = {**sw, "op": "sync"}
    return [
        StepStarted(step="lock", **sw),
        StepStarted(step="transfer", node="dgx1", **sy),
        Progress(step="transfer", node="dgx1", done=5.0, total=10.0, unit="GiB", **sy),
        StepFinished(step="transfer", node="dgx1", **sy),
        StepStarted(step="boot", **sw),
        Progress(step="boot", node="dgx5", done=50.0, total=100.0, message="autotune", **sw),
        Finished.done("switch", f"{target.lane} ready", **where(target)),
    ]


async def test_after_a_switch_nothing_runs_and_the_lane_reads_serving(
    make_app: Callable[..., CockpitApp],
) -> None:
    ops = ScriptedOperations(step_s=0.2, events={"switch": switch_with_sync})
    app = make_app(operations=ops)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_lane(app, SERVING)
        await pilot.press("w", "y")
        await until(pilot, "the sync", lambda: "sync transfer" in ops_text(app))
        await operations_done(app)
        await settle(pilot)
        snap = main(app).snap
        mine = [op for op in snap.ops if op.running and op.lane == scene.LANE and op.op != "bench"]
        assert mine == [] and "transfer" not in ops_text(app)  # no phantom "▶ sync … transfer"
        assert "✔ switch" in ops_text(app)
        assert lane_state(app, SERVING) == "serving"


async def test_cancel_removes_an_operation_that_never_sends_its_finished(
    make_app: Callable[..., CockpitApp],
) -> None:
    def endless(target: LaneTarget) -> list[OpEvent]:
        kw = {"op": "sync", "lane": target.lane, "cluster": target.cluster}
        return [StepStarted(step="transfer", **kw)] * 100  # cancelled long before the end

    app = make_app(operations=ScriptedOperations(step_s=0.2, events={"sync": endless}))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_lane(app, "qwen3-0.6b-2x@dgx56-switch")
        await pilot.press("y", "y")
        await until(pilot, "the transfer", lambda: "transfer" in ops_text(app))
        await pilot.press("x")
        await operations_done(app)
        await settle(pilot)
        mine = [op for op in main(app).snap.ops if op.cluster == "dgx56-switch"]
        assert [(op.running, op.summary) for op in mine] == [(False, "cancelled by the operator")]
        assert lane_state(app, "qwen3-0.6b-2x@dgx56-switch") == "stopped"


def failing_launch(target: LaneTarget) -> list[OpEvent]:
    """qwen on dgx56-switch: the ranks start (container ids in the details), rank 1 on dgx6
    fails, the rollback removes both."""
    kw = {"op": "launch", "lane": target.lane, "cluster": target.cluster}
    return [
        StepStarted(step="start", node="dgx6", **kw),
        StepFinished(step="start", node="dgx6", detail="0123456789ab", **kw),
        StepStarted(step="start", node="dgx5", **kw),
        StepFinished(step="start", node="dgx5", detail="ba9876543210", **kw),
        StepStarted(step="boot", **kw),
        Notice(
            severity=Severity.ERROR,
            message="rank 1 on dgx6 failed",
            node="dgx6",
            line="SafetensorError: bad header",
            **kw,
        ),
        Notice(severity=Severity.INFO, message="rolled back: every rank removed", **kw),
        Finished.failed(
            "launch", "rank 1 on dgx6 failed: SafetensorError: bad header", **where(target)
        ),
    ]


async def test_the_log_follows_the_launch_and_keeps_the_failing_ranks_lines(
    make_app: Callable[..., CockpitApp],
) -> None:
    feed = ManualFeed()
    target = "qwen3-0.6b-2x@dgx56-switch"  # dgx5, dgx6
    ops = ScriptedOperations(step_s=0.3, events={"launch": failing_launch})
    app = make_app(operations=ops, feeds=[feed])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_lane(app, target)
        await pilot.press("l", "y")
        await until(pilot, "the ranks followed", lambda: len(feed.followed) == 2)
        assert [(n, name, r.rank, r.container) for n, name, r in feed.followed] == [
            ("dgx6", "cockpit-qwen3-0.6b-2x-r1", 1, "0123456789ab"),
            ("dgx5", "cockpit-qwen3-0.6b-2x-r0", 0, "ba9876543210"),
        ]
        assert feed.refreshed[:2] == ["dgx6", "dgx5"]  # each node looked at again at once
        # the followed streams' lines arrive; the nodes' container lists never showed them
        feed.push(RankLines("dgx5", QWEN, "dgx56-switch", 0, ("head booting",), fresh=True))
        feed.push(
            RankLines(
                "dgx6",
                QWEN,
                "dgx56-switch",
                1,
                ("loading", "SafetensorError: bad header"),
                fresh=True,
            )
        )
        log = main(app).query_one(LogPane)
        await until(pilot, "the head's log", lambda: log.source == LogSource(target, "dgx5", 0))
        await operations_done(app)
        await settle(pilot)
        assert log.source == LogSource(target, "dgx6", 1)  # the failing rank's, kept
        assert log.ended and "(ended)" in str(log.border_title)
        assert log.query_one(TailLog).lines[-1] == "SafetensorError: bad header"
        assert lane_state(app, target) == "stopped"  # its reason is in Operations
        assert "✘ launch" in ops_text(app) and "SafetensorError" in ops_text(app)


def second_lane(feed: ManualFeed) -> None:
    """qwen on dgx1+dgx2 runs too, with its NCCL ranks (also "rank 0/2" and "rank 1/2")."""
    inv = scene.inventory()
    samples = [s for s in scene.node_samples(inv) if isinstance(s, NodeSampled)]
    for rank, node in enumerate(("dgx1", "dgx2")):
        last = [s for s in samples if s.node == node][-1]
        feed.push(replace(last, at=scene.T0, ranks=(RankOnNode(QWEN, DAC, rank),)))
        line = (
            f"{node}:9{rank}:9{rank} [0] NCCL INFO comm 0x1 rank {rank} nranks 2 cudaDev 0 busId 1"
        )
        feed.push(RankLines(node, QWEN, DAC, rank, (line + " - Init COMPLETE",), fresh=True))


def nccl_ranks_text(app: CockpitApp) -> str:
    return painted(app.screen.query_one("#nccl-ranks"))


async def test_the_nccl_pane_lists_exactly_the_selected_lanes_ranks(
    make_app: Callable[..., CockpitApp],
) -> None:
    feed = ManualFeed()
    app = make_app(feeds=[feed])
    async with app.run_test(size=SIZE) as pilot:
        second_lane(feed)
        await settle(pilot)
        nccl = main(app).query_one(NcclPane)
        await select_lane(app, QWEN_KEY)
        await until(pilot, "qwen's ranks", lambda: "dgx1 rank 0/2" in nccl_ranks_text(app))
        text = nccl_ranks_text(app)
        assert text.splitlines() == [
            line for line in text.splitlines() if line[:4] in ("dgx1", "dgx2")
        ]
        assert str(nccl.border_title) == f"NCCL {QWEN_KEY}"
        await select_lane(app, SERVING)
        await until(pilot, "the 4x ranks", lambda: "dgx1" not in nccl_ranks_text(app))
        assert str(nccl.border_title) == f"NCCL {SERVING}"
        assert [line.split()[0] for line in nccl_ranks_text(app).splitlines()] == ["dgx5", "dgx6"]
        tail = nccl.query_one(TailLog)
        assert tail.lines and all(line.split("/")[0] in ("dgx5", "dgx6") for line in tail.lines)


async def test_the_engine_panes_drop_a_lane_once_its_containers_are_gone(
    make_app: Callable[..., CockpitApp],
) -> None:
    feed = ManualFeed()
    app = make_app(feeds=[feed])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        kv = main(app).query_one("#kv-body")
        assert painted(kv).startswith("mimo26-flash-mopd-4x-spark…@dgx58-switch\n")  # one line
        inv = scene.inventory()
        samples = [s for s in scene.node_samples(inv) if isinstance(s, NodeSampled)]
        for node in scene.BENCH_NODES:  # the lane was stopped: the nodes list no container
            feed.push(replace([s for s in samples if s.node == node][-1], at=scene.T0, ranks=()))
        await until(pilot, "the KV pane emptied", lambda: "usage" not in painted(kv))
        for pane in (KvPane, ThroughputPane):
            assert painted(main(app).query_one(pane).query_one(Body)) == "no lane serving"
        assert lane_state(app, SERVING) == "stopped"
        assert main(app).query_one(LogPane).source is None  # no dead container followed


def row(app: CockpitApp, node: str) -> list[str]:
    table = app.screen.query_one("#nodes-table", DataTable)
    return [c.plain if isinstance(c, Text) else str(c) for c in table.get_row(node)]


async def test_a_down_node_shows_down_without_figures_and_no_other_row_changes(
    make_app: Callable[..., CockpitApp],
) -> None:
    feed = ManualFeed()
    app = make_app(feeds=[feed])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        before = {n: row(app, n) for n in app.store.inventory.nodes}
        assert before["dgx7"][2] == "mimo26-flash-mopd-4x/r2"
        feed.push(NodeLost("dgx7", scene.T0, "connection refused", retry_in_s=4.0, down=True))
        await until(pilot, "dgx7 down", lambda: row(app, "dgx7")[1].startswith("DOWN"))
        cells = row(app, "dgx7")
        assert cells[2] == "?" and all(c in ("–", "") for c in cells[3:])  # nothing as if live
        for node, cells in before.items():
            if node != "dgx7":
                assert row(app, node) == cells, node
        assert lane_state(app, SERVING) == "serving · dgx7 unreachable"


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (160, 48), (200, 60)])
async def test_bench_flags_are_visible_at_every_size(
    make_app: Callable[..., CockpitApp], size: tuple[int, int]
) -> None:
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await settle(pilot, 0.5)
        screen = main(app)
        pane = screen.query_one("#bench")
        pane.scroll_visible(animate=False)  # the stacked narrow layout scrolls to it
        await settle(pilot)
        flags = screen.query_one("#bench-flags")
        assert painted(flags) == "⚑ prefill-in-decode: 4K c2"
        inside = pane.content_region
        assert flags.region.height >= 1 and inside.contains_region(flags.region), (
            size, flags.region, inside,
        )  # fmt: skip


ORPHAN_WHY = "its launch by ops@bastion (pid 4242) never reached ready and holds no lock any more"


def scene_sample(node: str) -> NodeSampled:
    inv = scene.inventory()
    samples = [s for s in scene.node_samples(inv) if isinstance(s, NodeSampled)]
    return replace([s for s in samples if s.node == node][-1], at=scene.T0)


async def test_an_orphaned_lane_is_shown_with_its_stop_and_s_stops_it(
    make_app: Callable[..., CockpitApp],
) -> None:
    """Issue 19: containers whose launching cockpit is gone are ORPHANED in the Lanes row and
    the Nodes pane, with the command that stops them; `s` on the row stops the lane."""
    feed = ManualFeed()

    def stopped(target: LaneTarget) -> list[OpEvent]:
        for node in scene.BENCH_NODES:  # the nodes list the lane's containers no more
            feed.push(replace(scene_sample(node), ranks=()))
        return [Finished.done("stop", f"stopped {target.lane}", **where(target))]

    ops = ScriptedOperations(events={"stop": stopped})
    app = make_app(operations=ops, feeds=[feed])
    async with app.run_test(size=SIZE) as pilot:
        for rank, node in enumerate(scene.BENCH_NODES):
            mine = RankOnNode(scene.LANE, scene.CLUSTER, rank, orphaned=ORPHAN_WHY)
            feed.push(replace(scene_sample(node), ranks=(mine,)))
        lanes = main(app).query_one(LanesPane)
        await until(pilot, "the orphan", lambda: "ORPHANED" in lane_state(app, SERVING))
        assert lane_state(app, SERVING) == "ORPHANED · serving"
        assert str(lanes.border_subtitle) == (
            f"ORPHANED: s on its row stops it (cockpit stop --lane {scene.LANE})"
        )
        assert row(app, "dgx5")[2] == "mimo26-flash-mopd-4x/r0 ORPHANED"
        assert row(app, "dgx1")[2] == "–"  # another node's cell says nothing of it
        lane = main(app).snap.lane(SERVING) if main(app).snap else None
        assert lane is not None and lane.orphaned.startswith(f"dgx5: {ORPHAN_WHY}; dgx6: ")
        await select_lane(app, SERVING)
        await pilot.press("s", "y")
        await until(pilot, "the stop", lambda: lane_state(app, SERVING) == "stopped")
        assert ops.started == [("stop", scene.LANE)]
        assert not str(lanes.border_subtitle) and row(app, "dgx5")[2] == "–"


async def test_a_node_heard_before_its_containers_shows_them_unknown_not_none(
    make_app: Callable[..., CockpitApp],
) -> None:
    """Issue 19: a cockpit opened while a node is down showed the head of the only serving lane
    with lane/rank '–' until the head's container list came (its GPU sample comes first)."""
    feed = ManualFeed()
    app = make_app(feeds=[feed])
    async with app.run_test(size=SIZE) as pilot:
        feed.push(replace(scene_sample("dgx5"), ranks=(), ranks_known=False))
        await until(pilot, "the head unknown", lambda: row(app, "dgx5")[2] == "…")
        assert row(app, "dgx5")[1] == "up"
        lane = main(app).snap.lane(SERVING) if main(app).snap else None
        assert lane is not None and lane.phase is LanePhase.SERVING  # its engine answers
        assert lane.state_text == "serving · dgx5 not heard from yet"  # not "1/4 ranks up"
        feed.push(scene_sample("dgx5"))
        await until(pilot, "the head's rank", lambda: row(app, "dgx5")[2] != "…")
        assert row(app, "dgx5")[2] == "mimo26-flash-mopd-4x/r0"
        assert lane_state(app, SERVING) == "serving"
