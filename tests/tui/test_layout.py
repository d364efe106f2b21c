"""Layout at the widths operators use between the stacked 80-column screen and a wide one."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.css.stylesheet import Stylesheet
from textual.dom import DOMNode
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import DataTable

from cockpit.tui.app import CockpitApp
from cockpit.tui.keymap import PANE_NAMES
from cockpit.tui.screens.main import MainScreen
from cockpit.tui.widgets.lanes import LanesPane
from cockpit.tui.widgets.nodes import COLUMNS, NodesPane
from cockpit.tui.widgets.pane_bar import PaneBar
from tests.tui.calls import count_calls


@pytest.mark.parametrize("width", [120, 160])
async def test_the_nodes_pane_keeps_memory_on_screen(
    make_app: Callable[..., CockpitApp], width: int
) -> None:
    """A Nodes pane too narrow for every column cuts the clocks and the history, never memory."""
    app = make_app()
    async with app.run_test(size=(width, 40)) as pilot:
        await pilot.pause(0.2)
        table = app.screen.query_one("#nodes-table", DataTable)
        widths = [c.get_render_width(table) for c in table.ordered_columns]
        through_memory = sum(widths[: COLUMNS.index("memory") + 1])
        assert "UMA" in str(table.get_row_at(0)[COLUMNS.index("memory")])  # a figure to show
        assert through_memory <= table.scrollable_content_region.width, (width, widths)


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (160, 48), (200, 60)])
async def test_the_lanes_pane_fits_its_width_names_whole_and_the_state_flexing(
    make_app: Callable[..., CockpitApp], size: tuple[int, int]
) -> None:
    """No horizontal scroll at any size: the endpoint and the last bench go first (enter shows
    them), lane names are never cut (their middle tells 2x from 4x), and the state column takes
    the room to spare, so a wide screen shows a long state whole."""
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.3)
        table = app.screen.query_one("#lanes-table", DataTable)
        labels = [str(c.label) for c in table.ordered_columns]
        widths = [c.get_render_width(table) for c in table.ordered_columns]
        assert sum(widths) <= table.scrollable_content_region.width, (size, labels, widths)
        rows = [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]
        assert "mimo26-flash-mopd-2x-sparkring" in [r[0] for r in rows]
        state = [r[labels.index("state")] for r in rows]
        if size[0] >= 160:
            assert "syncing load on dgx1 44%" in state
            assert "last bench" in labels and "tg 60.2 t/s @8K c1" in [r[-1] for r in rows]
        if size[0] >= 200:
            assert "endpoint" in labels


async def test_a_narrow_terminal_names_every_pane_and_its_digit_brings_it_into_view(
    make_app: Callable[..., CockpitApp],
) -> None:
    """At 80×24 the panes stack below the fold: the pane bar names all eight, and a digit
    focuses that pane and scrolls it into view (the bar marks it)."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.3)
        bar = app.screen.query_one(PaneBar)
        assert bar.display and bar.region.height == 1
        text = str(bar.render())
        assert all(f"{n} {name}" in text for n, name in enumerate(PANE_NAMES, 1)), text
        for digit, pane_id in (("8", "#bench"), ("4", "#log"), ("1", "#lanes")):
            await pilot.press(digit)
            await pilot.pause(0.2)
            pane = app.screen.query_one(pane_id)
            assert app.screen.focused is not None and app.screen.focused in pane.walk_children()
            assert 0 < pane.region.y < 24 and pane.region.height > 2, (digit, pane.region)
        assert bar._shown is not None and bar._shown[0] == 0  # Lanes marked


async def test_the_pane_bar_is_hidden_where_every_pane_shows(
    make_app: Callable[..., CockpitApp],
) -> None:
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.2)
        assert not app.screen.query_one(PaneBar).display


async def test_maximise_fills_the_screen_for_every_pane(
    make_app: Callable[..., CockpitApp],
) -> None:
    app = make_app()
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause(0.3)
        for n in range(1, len(PANE_NAMES) + 1):
            await pilot.press(str(n), "m")
            await pilot.pause(0.1)
            maximised = app.screen.maximized
            assert maximised is not None, PANE_NAMES[n - 1]
            assert maximised.region.height >= 55 and maximised.region.width >= 195, (
                PANE_NAMES[n - 1],
                maximised.region,
            )
            await pilot.press("m")
            await pilot.pause(0.05)
            assert app.screen.maximized is None


async def test_maximising_the_lanes_pane_fits_its_columns_before_its_layout(
    make_app: Callable[..., CockpitApp], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Maximised, the Lanes table was refitted to the whole width only after the maximise's
    layout: the first frame showed it at its old width, then it was built and rendered again
    (`tui_press_cpu`: `m` 84 → 68 ms of CPU a press). It is now fitted to the width it will have
    before the maximise, and the resize that follows finds nothing to refit."""
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.2)
        table = app.screen.query_one("#lanes-table", DataTable)
        table.focus()
        await pilot.pause(0.2)
        normal = [c.width for c in table.ordered_columns]
        screen = app.screen
        assert isinstance(screen, MainScreen)
        screen.action_maximise()
        fitted = [c.width for c in table.ordered_columns]
        assert fitted != normal  # before any layout
        fills = count_calls(monkeypatch, LanesPane, "fill")
        cleared = count_calls(monkeypatch, table, "clear")
        await pilot.pause(0.3)
        assert fills.count and not cleared.count  # shown again at its new size: nothing to refit
        assert [c.width for c in table.ordered_columns] == fitted
        assert table.region.width >= 150


async def test_restoring_the_lanes_pane_fits_its_columns_first_so_it_costs_one_layout(
    make_app: Callable[..., CockpitApp], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Maximised, the Lanes table is fitted to the whole width; restored, it was refitted only
    after the restore's layout, whose new columns then cost a second and third layout (the
    press took ~50 % more CPU). It is now refitted to its layout width before the restore."""
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.2)
        table = app.screen.query_one("#lanes-table", DataTable)
        table.focus()
        await pilot.pause(0.2)
        normal = [c.width for c in table.ordered_columns]
        await pilot.press("m")
        await pilot.pause(0.3)
        assert [c.width for c in table.ordered_columns] != normal  # fitted to the whole width
        layouts = count_calls(monkeypatch, Screen, "_refresh_layout")
        screen = app.screen
        assert isinstance(screen, MainScreen)
        screen.action_maximise()
        assert [c.width for c in table.ordered_columns] == normal  # before any layout
        await pilot.pause(0.3)
        assert [c.width for c in table.ordered_columns] == normal
        assert layouts.count <= 2  # the restore, and at most one for what the other panes show


async def test_the_host_columns_show_whole_when_the_nodes_pane_has_room(
    make_app: Callable[..., CockpitApp],
) -> None:
    """At 160×48 they would not fit beside the GPU's: hidden, not cut; maximised, they show."""
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.2)
        table = app.screen.query_one("#nodes-table", DataTable)
        assert len(table.ordered_columns) == len(COLUMNS) - 3
        widths = [c.get_render_width(table) for c in table.ordered_columns]
        assert sum(widths) <= table.scrollable_content_region.width
        table.focus()
        await pilot.press("m")
        for _ in range(40):  # the pane refits after the maximised layout
            await pilot.pause(0.05)
            if len(table.ordered_columns) == len(COLUMNS):
                break
        assert [c.label.plain for c in table.ordered_columns][-3:] == ["cpu", "net ↓ ↑", "swap"]
        await pilot.press("m")
        assert len(table.ordered_columns) == len(COLUMNS) - 3  # refitted before the restore
    async with make_app().run_test(size=(200, 60)) as pilot:
        await pilot.pause(0.2)
        table = pilot.app.screen.query_one("#nodes-table", DataTable)
        assert len(table.ordered_columns) == len(COLUMNS)


async def test_maximise_restyles_only_the_maximised_pane(
    make_app: Callable[..., CockpitApp], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Textual's `maximize` also sets `-maximized-view` on the screen, which restyles every node
    of the DOM and drops every pane's line cache: `m` cost ~175 ms of CPU a press, 76 without
    (`benchmarks/tui_press_cpu.py`). Only the maximised pane's subtree is restyled now."""
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("2")  # the Nodes pane
        await pilot.pause(0.5)
        restyled: list[DOMNode] = []
        apply = Stylesheet.apply

        def counting(sheet: Stylesheet, node: DOMNode, *args: object, **kwargs: object) -> None:
            restyled.append(node)
            apply(sheet, node, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(Stylesheet, "apply", counting)
        await pilot.press("m")
        await pilot.pause(0.2)
        maximised = app.screen.maximized
        assert isinstance(maximised, NodesPane)
        await pilot.press("m")
        await pilot.pause(0.2)
        subtree = set(maximised.walk_children(with_self=True))
        others = [n for n in restyled if isinstance(n, Widget) and n not in subtree]
        assert restyled and not others, others[:5]
