"""The key bar is rebuilt when the keys it shows change, and only then."""

from __future__ import annotations

from collections.abc import Callable

from textual.widgets._footer import FooterKey

from cockpit.tui.app import CockpitApp
from cockpit.tui.widgets.key_footer import KeyFooter

SIZE = (160, 48)


def shown(app: CockpitApp) -> list[FooterKey]:
    return list(app.screen.query_one(KeyFooter).query(FooterKey))


async def test_a_focus_move_keeps_the_key_bar_unless_its_keys_change(
    make_app: Callable[..., CockpitApp],
) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.focused is not None and app.focused.id == "lanes-table"
        before = shown(app)
        assert before, "the key bar shows keys"

        await pilot.press("tab")
        await pilot.pause()
        assert app.focused is not None and app.focused.id == "nodes-table"
        assert shown(app) == before  # the very same widgets: not recomposed

        await pilot.press("tab")
        await pilot.pause()
        assert app.focused is not None and app.focused.id == "nccl-log"
        after = shown(app)
        assert not set(after) & set(before)  # recomposed: the log pane's keys differ
        assert {k.key for k in after} != {k.key for k in before}
