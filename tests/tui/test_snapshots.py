"""The main screen pinned per theme at 80×24 and 160×48 (and at 120×40 and 200×60 in one theme),
from the recorded scene (no live fleet).

Update after an intended change: `pytest tests/tui/test_snapshots.py --snapshot-update`, then look
at the SVGs in `__snapshots__/` before committing them.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.pilot import Pilot

from cockpit.tui.app import CockpitApp

THEMES = ("cockpit-dark", "cockpit-light", "cockpit-high-contrast")
SIZES = ((80, 24), (160, 48))


async def settle(pilot: Pilot) -> None:
    await pilot.pause(0.2)
    await pilot.app.workers.wait_for_complete()
    # the scene's lane preempts: the advisor's notice would cover the panes these pin (it has
    # its own test, tests/tui/test_engine_pane.py; the Engine pane's title keeps its title)
    pilot.app.clear_notifications()
    await pilot.pause(0.1)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("theme", THEMES)
def test_main_screen(
    snap_compare: Callable[..., bool],
    make_app: Callable[..., CockpitApp],
    theme: str,
    size: tuple[int, int],
) -> None:
    assert snap_compare(make_app(theme=theme), terminal_size=size, run_before=settle)


@pytest.mark.parametrize("size", ((120, 40), (200, 60)), ids=lambda s: f"{s[0]}x{s[1]}")
def test_main_screen_between_and_beyond(
    snap_compare: Callable[..., bool], make_app: Callable[..., CockpitApp], size: tuple[int, int]
) -> None:
    """The two other sizes operators use (one theme: the layout, not the colours, is at stake):
    at 120×40 the two columns at their narrowest, at 200×60 the room the state column takes."""
    assert snap_compare(make_app(theme="cockpit-dark"), terminal_size=size, run_before=settle)


def test_the_engine_pane_maximised_on_a_real_engine(
    snap_compare: Callable[..., bool], make_app: Callable[..., CockpitApp]
) -> None:
    """Every quantile, the finish reasons with counts and the goodput's derivation, from the
    captures of a real vLLM 0.32 (prefix caching shown off: the advice in full)."""
    from tests.tui import scene

    app = make_app(with_scene=False)
    app.store.apply_all([*scene.node_samples(app.store.inventory),
                         *scene.real_engine(prefix_caching=False)])  # fmt: skip

    async def maximised(pilot: Pilot) -> None:
        pilot.app.screen.query_one("#throughput-body").focus()
        await pilot.press("m")
        await settle(pilot)

    assert snap_compare(app, terminal_size=(120, 40), run_before=maximised)


def test_confirmation_shows_the_plan(
    snap_compare: Callable[..., bool], make_app: Callable[..., CockpitApp]
) -> None:
    from tests.tui.scripted_ops import ScriptedOperations

    app = make_app(operations=ScriptedOperations())
    assert snap_compare(app, press=["l"], terminal_size=(100, 30), run_before=settle)


def test_help_screen_lists_the_keys(
    snap_compare: Callable[..., bool], make_app: Callable[..., CockpitApp]
) -> None:
    assert snap_compare(make_app(readonly=True), press=["question_mark"], terminal_size=(100, 30),
                        run_before=settle)  # fmt: skip


def test_bench_plan_editor(
    snap_compare: Callable[..., bool], make_app: Callable[..., CockpitApp]
) -> None:
    """`b` on the 32K Qwen lane: the CLI's defaults with three runs, the depths it cannot hold
    flagged under the field."""
    from textual.widgets import Input

    from cockpit.tui.screens.bench_plan import BenchPlanScreen
    from tests.tui.scripted_ops import ScriptedOperations
    from tests.tui.test_keys import select_lane

    async def open_editor(pilot: Pilot) -> None:
        await settle(pilot)
        await select_lane(pilot.app, "qwen3-0.6b-2x@dgx56-switch")  # type: ignore[arg-type]
        await pilot.press("b")
        while not isinstance(pilot.app.screen, BenchPlanScreen):  # the last plan read in a thread
            await pilot.pause(0.05)
        for field in pilot.app.screen.query(Input):
            field.cursor_blink = False  # one frame, whenever it is taken
        await pilot.pause(0.1)

    app = make_app(operations=ScriptedOperations())
    assert snap_compare(app, terminal_size=(100, 30), run_before=open_editor)
