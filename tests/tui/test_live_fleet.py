"""The issues' Done-when flows, driven with Pilot on a simulated fleet over real SSH: launch with
`l`, watch the lane reach serving, bench with `b` and see KV and throughput move, switch with
`w`, stop with `s`; and what the panes show through a refusal, a switch, a crash and a lost node.
Every operation is confirmed on its plan first."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from textual.geometry import Region
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Input

from cockpit.config import load_inventory
from cockpit.ops.context import OpContext
from cockpit.ssh.inventory import pool_for
from cockpit.status.probe import Pace
from cockpit.tui.app import CockpitApp
from cockpit.tui.feeds.fleet import FleetFeed
from cockpit.tui.fleet_ops import FleetOperations
from cockpit.tui.screens.bench_plan import BenchPlanScreen
from cockpit.tui.screens.confirm import ConfirmScreen
from cockpit.tui.settings import TuiSettings
from cockpit.tui.state import FleetSnapshot, LanePhase, NodeHealth
from cockpit.tui.state.views import LogSource
from cockpit.tui.widgets.lanes import LanesPane
from cockpit.tui.widgets.logs import LogPane
from cockpit.tui.widgets.tail import TailLog
from cockpit_sim.engine.text import TOKENIZER_DIR
from cockpit_sim.fleet import SimFleet

QWEN = "qwen3-0.6b-2x"
OTHER = "qwen3-0.6b-2x-b"
CLUSTER = "2nodes-dac"
SPEED = 200.0
BENCH_FIELDS = {"depths": "4K", "concurrency": "1,2", "pp": "512", "tg": "32", "runs": "1"}
S = TypeVar("S", bound=Screen[object])


def prepare(fleet: SimFleet) -> None:
    """A second Qwen lane to switch to (the fleet's own /24 keeps its ports apart from others)."""
    text = (fleet.inventory_dir / f"{QWEN}.toml").read_text()
    (fleet.inventory_dir / f"{OTHER}.toml").write_text(
        text.replace(f'name = "{QWEN}"', f'name = "{OTHER}"')
    )


async def until(
    pilot: Pilot, what: str, cond: Callable[[FleetSnapshot], bool], timeout: float
) -> FleetSnapshot:
    app = pilot.app
    assert isinstance(app, CockpitApp)
    deadline = time.monotonic() + timeout
    while True:
        snap = app.store.snapshot(time.time())
        if cond(snap):
            print(f"{what}: {time.monotonic() - deadline + timeout:.1f}s")
            return snap
        assert time.monotonic() < deadline, f"timed out waiting for {what}: {snap.lanes} {snap.ops}"
        await pilot.pause(0.25)


def phase(snap: FleetSnapshot, lane: str) -> LanePhase:
    view = snap.lane(f"{lane}@{CLUSTER}")
    assert view is not None
    return view.phase


async def press_on_lane(pilot: Pilot, lane: str, key: str) -> ConfirmScreen:
    app = pilot.app
    while any(w.group == "ops" and w.is_running for w in app.workers):
        await pilot.pause(0.1)  # the last operation has released its node locks
    pane = app.screen.query_one(LanesPane)
    pane.table.move_cursor(row=pane.table.get_row_index(f"{lane}@{CLUSTER}"))
    pane.table.focus()
    await pilot.pause(0.1)
    await pilot.press(key)
    if key == "b":  # the plan editor first: the test's small sweep, then the confirmation
        await until_screen(pilot, BenchPlanScreen, key)
        for name, text in BENCH_FIELDS.items():
            app.screen.query_one(f"#{name}", Input).value = text
        await pilot.pause()
        await pilot.press("enter")
    return await until_screen(pilot, ConfirmScreen, key)


async def until_screen(pilot: Pilot, kind: type[S], key: str) -> S:
    deadline = time.monotonic() + 30
    while not isinstance(pilot.app.screen, kind):  # the plan may need a survey of the nodes
        assert time.monotonic() < deadline, f"no {kind.__name__} after {key!r}"
        await pilot.pause(0.1)
    return pilot.app.screen


@pytest.mark.slow
async def test_launch_bench_switch_stop_from_the_keys(
    fleet_factory: Callable[..., SimFleet], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COCKPIT_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("COCKPIT_TIME_SCALE", repr(SPEED))  # the launcher tells the bench its speed
    fleet = fleet_factory(2, speed=SPEED)  # dgx1+dgx2: the 2nodes-dac cluster
    prepare(fleet)
    inventory = load_inventory(fleet.inventory_dir)
    async with pool_for(inventory) as pool:
        ops = FleetOperations(OpContext(inventory, pool), tmp_path / "reports", TOKENIZER_DIR)
        feed = FleetFeed(inventory, pool, Pace(gpu_ms=250, slow_s=0.5, images_every=2), 0.5)
        app = CockpitApp(inventory, feeds=[feed], operations=ops,
                         settings=TuiSettings(tmp_path / "tui.toml"))  # fmt: skip
        async with app.run_test(size=(160, 48)) as pilot:
            await until(pilot, "a live fleet",
                        lambda s: all(n.health is NodeHealth.LIVE for n in s.nodes), 30)  # fmt: skip

            confirm = await press_on_lane(pilot, QWEN, "l")
            assert "start dgx2, dgx1 (head last)" in confirm.planned.summary
            assert confirm.planned.memory.startswith("memory per rank: weights 0.7 GiB")
            assert "fits 31 of 32 sequences at 32,768 tokens" in confirm.planned.memory
            await pilot.press("y")
            await until(pilot, "qwen serving", lambda s: phase(s, QWEN) is LanePhase.SERVING, 90)

            await press_on_lane(pilot, QWEN, "b")
            await pilot.press("y")
            moved = {"gen": 0.0, "prompt": 0.0, "prefix_hit": 0.0}

            def bench_done(s: FleetSnapshot) -> bool:
                eng = s.engines.get(f"{QWEN}@{CLUSTER}")
                if eng is not None:
                    moved["gen"] = max(moved["gen"], eng.gen_tps or 0.0)
                    moved["prompt"] = max(moved["prompt"], eng.prompt_tps or 0.0)
                    moved["prefix_hit"] = max(moved["prefix_hit"], eng.prefix_hit_rate or 0.0)
                return any(op.op == "bench" and not op.running for op in s.ops)

            snap = await until(pilot, "the bench", bench_done, 120)
            bench = next(op for op in snap.ops if op.op == "bench")
            assert bench.ok, bench.summary
            # at 200x a whole 32-token stream takes about a millisecond of wall time and may
            # arrive in one read: the bench then says so instead of quoting a rate
            assert len(snap.bench) == 2
            said = ("faster-than-physics", "decode-not-observable")
            assert all(r.tg_tps or any(k in r.flags for k in said) for r in snap.bench)
            # throughput moved, and the KV pane's prefix-cache hits (warm-prefix points reuse the
            # context's blocks); at 200x speed a request is over between two gauge scrapes
            assert moved["gen"] > 0 and moved["prompt"] > 0 and moved["prefix_hit"] > 0, moved

            confirm = await press_on_lane(pilot, OTHER, "w")
            assert f"stop {QWEN}" in confirm.planned.summary
            await pilot.press("y")
            await until(pilot, "the switch",
                        lambda s: phase(s, OTHER) is LanePhase.SERVING
                        and phase(s, QWEN) is LanePhase.STOPPED, 90)  # fmt: skip

            await press_on_lane(pilot, OTHER, "s")
            await pilot.press("y")
            snap = await until(pilot, "the stop",
                               lambda s: any(op.op == "stop" and not op.running for op in s.ops)
                               and phase(s, OTHER) is LanePhase.STOPPED, 60)  # fmt: skip
            stop = next(op for op in snap.ops if op.op == "stop")
            assert stop.ok and "stopped" in stop.summary, stop.summary
            app.exit()


def painted(app: CockpitApp, selector: str) -> str:
    widget = app.screen.query_one(selector)
    strips = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
    return "\n".join(strip.text.rstrip() for strip in strips)


@pytest.mark.slow
async def test_the_panes_show_what_runs_through_refusal_switch_crash_and_a_lost_node(
    fleet_factory: Callable[..., SimFleet], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 19 on a real (simulated) fleet: a refused `l` leaves the lane serving; after a `w`
    nothing runs and the NCCL pane lists the new lane's ranks only; a launch whose worker
    crashes leaves the lane stopped and the worker's last lines in the Log pane; a stopped node
    turns DOWN and its peer's row keeps its lane."""
    monkeypatch.setenv("COCKPIT_STATE_DIR", str(tmp_path / "state"))
    fleet = fleet_factory(2, speed=SPEED)
    prepare(fleet)
    inventory = load_inventory(fleet.inventory_dir)
    qwen, other = f"{QWEN}@{CLUSTER}", f"{OTHER}@{CLUSTER}"
    async with pool_for(inventory) as pool:
        ops = FleetOperations(OpContext(inventory, pool), tmp_path / "reports", TOKENIZER_DIR)
        feed = FleetFeed(inventory, pool, Pace(gpu_ms=250, slow_s=0.5, images_every=2), 0.5)
        app = CockpitApp(inventory, feeds=[feed], operations=ops,
                         settings=TuiSettings(tmp_path / "tui.toml"))  # fmt: skip
        async with app.run_test(size=(160, 48)) as pilot:
            await until(pilot, "a live fleet",
                        lambda s: all(n.health is NodeHealth.LIVE for n in s.nodes), 30)  # fmt: skip
            await press_on_lane(pilot, QWEN, "l")
            await pilot.press("y")
            await until(pilot, "qwen serving", lambda s: phase(s, QWEN) is LanePhase.SERVING, 90)
            while any(w.group == "ops" and w.is_running for w in app.workers):
                await pilot.pause(0.1)

            await press_on_lane(pilot, QWEN, "l")  # it serves already: preflight refuses
            await pilot.press("y")
            phases = {phase(app.store.snapshot(time.time()), QWEN)}
            while any(w.group == "ops" and w.is_running for w in app.workers):
                phases.add(phase(app.store.snapshot(time.time()), QWEN))
                await pilot.pause(0.05)
            phases.add(phase(app.store.snapshot(time.time()), QWEN))
            assert phases == {LanePhase.SERVING}, phases
            snap = app.store.snapshot(time.time())
            assert [op.op for op in snap.ops] == ["launch"]  # the first one; the refusal left none
            assert any("refused" in n.message for n in app._notifications)

            await press_on_lane(pilot, OTHER, "w")
            await pilot.press("y")
            snap = await until(pilot, "the switch",
                               lambda s: not any(op.running for op in s.ops)
                               and phase(s, OTHER) is LanePhase.SERVING
                               and phase(s, QWEN) is LanePhase.STOPPED
                               and bool(s.nccl_ranks.get(other)), 90)  # fmt: skip
            assert set(snap.nccl_ranks) == {other}
            assert [(r.node, r.transport.rank) for r in snap.nccl_ranks[other]] == [
                ("dgx1", 0), ("dgx2", 1),
            ]  # fmt: skip
            assert set(snap.engines) == {other}
            await pilot.pause(0.3)
            assert "NCCL " + other in str(app.screen.query_one("#nccl").border_title)
            assert other in painted(app, "#kv-body").replace("\n", "")

            await press_on_lane(pilot, OTHER, "s")
            await pilot.press("y")
            await until(pilot, "the stop", lambda s: phase(s, OTHER) is LanePhase.STOPPED
                        and not any(op.running for op in s.ops), 60)  # fmt: skip
            fleet.set_fault("dgx2", "weights_crash")
            await press_on_lane(pilot, QWEN, "l")
            await pilot.press("y")
            snap = await until(pilot, "the crashed launch",
                               lambda s: any(op.op == "launch" and op.ok is False for op in s.ops)
                               and phase(s, QWEN) is LanePhase.STOPPED, 90)  # fmt: skip
            failed = next(op for op in snap.ops if op.op == "launch")
            assert failed.node == "dgx2", failed
            await pilot.pause(0.3)
            log = app.screen.query_one(LogPane)
            assert log.source == LogSource(qwen, "dgx2", 1) and log.ended
            lines = log.query_one(TailLog).lines
            assert any("Error" in line for line in lines[-40:]), lines[-40:]
            fleet.set_fault("dgx2", "weights_crash", on=False)

            await press_on_lane(pilot, QWEN, "l")
            await pilot.press("y")
            await until(pilot, "qwen serving again",
                        lambda s: phase(s, QWEN) is LanePhase.SERVING, 90)  # fmt: skip
            fleet.stop_node("dgx2")
            snap = await until(pilot, "dgx2 down",
                               lambda s: s.nodes[1].health is NodeHealth.DOWN, 60)  # fmt: skip
            head = snap.nodes[0]
            assert head.health is NodeHealth.LIVE and [r.lane for r in head.ranks] == [QWEN]
            fleet.start_node("dgx2")
            app.exit()
