"""A new user's pass over every key on the smallest terminal and a large one: each answers visibly."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from cockpit.tui.app import CockpitApp
from cockpit.tui.keymap import MAIN_BINDINGS
from tests.tui.scripted_ops import ScriptedOperations

QUIET = {"quit", "load", "fix"}
"""`q` ends the app; `g` exists only in `cockpit demo` and `F` only after a refusal it mends
(both hidden from the footer, the help and the palette until then)."""


@pytest.mark.parametrize("size", [(80, 24), (200, 60)], ids=["80x24", "200x60"])
async def test_every_key_answers_and_escape_gives_the_keys_back(
    make_app: Callable[..., CockpitApp],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    size: tuple[int, int],
) -> None:
    """Each key opens a screen, posts a notice, moves the focus or changes what is shown; and
    after `/` and Escape the next keys reach the cockpit (they typed into the hidden search
    field before: every key after it seemed dead)."""
    monkeypatch.chdir(tmp_path)  # ctrl+s saves the log under ./logs
    app = make_app(operations=ScriptedOperations())
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.3)
        main = app.screen
        silent = []
        for binding in MAIN_BINDINGS:
            if binding.id in QUIET:
                continue
            before = _before(app)
            await pilot.press(binding.key)
            await pilot.pause(0.2)
            if not _answered(app, main, before):
                silent.append(binding.key)
            while app.screen is not main:
                await pilot.press("escape")
                await pilot.pause(0.1)
            if binding.id == "search":
                await pilot.press("escape")  # out of the search field, the filter unchanged
                await pilot.pause(0.1)
                assert app.focused is not None and app.focused.id == "log-tail"
            app.clear_notifications()
        assert not silent, f"keys with no visible answer at {size}: {silent}"


def _before(app: CockpitApp) -> tuple[object, ...]:
    """What a key or an entry may change: the screen's picture, the focus, the notices, the theme."""
    return (app.export_screenshot(), app.focused, len(app._notifications), app.theme)


def _answered(app: CockpitApp, main: object, before: tuple[object, ...]) -> bool:
    """A new screen, focus, notice or theme, or anything else on screen changed."""
    return (
        app.screen is not main
        or app.focused is not before[1]
        or len(app._notifications) != before[2]
        or app.theme != before[3]
        or app.export_screenshot() != before[0]
    )


@pytest.mark.parametrize("size", [(80, 24), (200, 60)], ids=["80x24", "200x60"])
async def test_every_palette_entry_answers(
    make_app: Callable[..., CockpitApp],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    size: tuple[int, int],
) -> None:
    """The palette's entries, run as the palette runs them (its callback), each answer visibly
    at both sizes, as their keys do; Textual's own entries (quit aside) too."""
    monkeypatch.chdir(tmp_path)
    app = make_app(operations=ScriptedOperations())
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.3)
        main = app.screen
        commands = [c for c in app.get_system_commands(main) if c.title != "Quit"]
        assert len(commands) >= len(MAIN_BINDINGS) - len(QUIET) - 1
        silent = []
        for command in commands:
            before = _before(app)
            result = command.callback()
            if hasattr(result, "__await__"):
                await result
            for _ in range(20):  # Textual's own (a screenshot saved) answer from a worker
                await pilot.pause(0.1)
                if _answered(app, main, before):
                    break
            if not _answered(app, main, before):
                silent.append(command.title)
            while app.screen is not main:
                await pilot.press("escape")
                await pilot.pause(0.1)
            if app.focused is not None and app.focused.id == "log-search":
                await pilot.press("escape")
                await pilot.pause(0.1)
            app.clear_notifications()
        assert not silent, f"palette entries with no visible answer: {silent}"
