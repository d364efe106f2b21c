"""The command palette's lane entries: every lane × operation ("Launch mimo26-pro-mopd-8x-
sparkring@8nodes-switch"), found by any words of it in any order ("pro 8x", "stop qwen dac").

Textual's matcher takes a query as one run of characters, so "pro 8x" matched no lane: here each
word must match on its own, and the hit scores the mean of the words' scores."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.fuzzy import Matcher

from cockpit.tui.keymap import NODE_CHANGING
from cockpit.tui.operations import LaneTarget

if TYPE_CHECKING:
    from cockpit.tui.app import CockpitApp

LANE_OPS = ("launch", "stop", "sync", "sync_model", "bench", "switch")
VERB = {"launch": "Launch", "stop": "Stop", "sync": "Sync the image of",
        "sync_model": "Sync the model snapshot of", "bench": "Bench",
        "switch": "Switch to"}  # fmt: skip


def words_score(query: str, title: str) -> float:
    """Mean of each query word's fuzzy score in `title`; 0 when any word does not match."""
    words = query.split()
    if not words:
        return 0.0
    scores = [Matcher(word).match(title) for word in words]
    return 0.0 if min(scores) <= 0 else sum(scores) / len(scores)


class LaneCommands(Provider):
    def _entries(self) -> Iterator[tuple[str, str, Callable[[], None]]]:
        app: CockpitApp = self.app  # type: ignore[assignment]
        from cockpit.tui.screens.main import MainScreen

        main = next((s for s in app.screen_stack if isinstance(s, MainScreen)), None)
        if main is None or main.snap is None or app.operations is None:
            return
        for lane in main.snap.lanes:
            for op in LANE_OPS:
                if app.readonly and op in NODE_CHANGING:
                    continue
                target = LaneTarget(lane.lane, lane.cluster)
                yield (
                    f"{VERB[op]} {lane.key}",
                    f"{op} · now {lane.state_text}",
                    partial(main.operate, op, target),
                )

    async def discover(self) -> Hits:
        for title, help_text, run in self._entries():
            yield DiscoveryHit(title, run, help=help_text)

    async def search(self, query: str) -> Hits:
        for title, help_text, run in self._entries():
            score = words_score(query, title)
            if score > 0:
                yield Hit(score, title, run, help=help_text)
