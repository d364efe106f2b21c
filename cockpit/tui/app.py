"""The cockpit's Textual app: thin. It owns the store, the feeds' workers, themes and keymap;
the main screen does the rest."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import App, SystemCommand
from textual.screen import Screen

from cockpit.backoff import Backoff
from cockpit.config import Inventory
from cockpit.errors import CockpitError
from cockpit.tui.feeds import Feed, FollowsContainers, RefreshesNodes
from cockpit.tui.keymap import BINDING_IDS, DEMO_ONLY, MAIN_BINDINGS, TAIL_BINDINGS
from cockpit.tui.lane_commands import LaneCommands
from cockpit.tui.messages import (
    EngineScraped,
    LogLines,
    NodePolled,
    OpFinished,
    OpProgress,
    message_for,
)
from cockpit.tui.operations import Operations
from cockpit.tui.screens.main import MainScreen
from cockpit.tui.settings import TuiSettings, save_theme
from cockpit.tui.state.inputs import RankOnNode, StoreInput
from cockpit.tui.state.readings import lane_readings, node_readings
from cockpit.tui.state.store import Store
from cockpit.tui.state.views import FleetSnapshot, NodeHealth
from cockpit.tui.theming import DEFAULT_THEME, THEMES_DIR, load_themes

if TYPE_CHECKING:
    from cockpit.history.recorder import Recorder
    from cockpit.ops.inflight import InFlight
    from cockpit.tui.demo import Demo

TEXTUAL_DUPLICATES = frozenset({"Theme", "Maximize", "Minimize", "Keys"})
"""Textual's own palette entries the cockpit's keys already offer (`t` cycles the cockpit's
themes and remembers the choice, `m` maximises the pane, `?` lists the keys)."""
FEED_BACKOFF = Backoff()  # between restarts of a feed that keeps failing
SAMPLE_EVERY_S = 1.0  # the history takes the fleet's figures from a frame at most this often
_SAVING = threading.Lock()  # serialises the theme saves of the settings worker threads


class CockpitApp(App[None]):
    TITLE = "cockpit"
    ENABLE_COMMAND_PALETTE = True
    COMMANDS = App.COMMANDS | {LaneCommands}

    def __init__(
        self,
        inventory: Inventory,
        *,
        feeds: Sequence[Feed] = (),
        operations: Operations | None = None,
        settings: TuiSettings,
        readonly: bool = False,
        fleet_label: str = "",
        clock: Callable[[], float] = time.time,
        theme_dirs: Iterable[Path] = (THEMES_DIR,),
        persist_theme: bool = True,
        baselines: Mapping[str, Mapping[tuple[int, int], float]] | None = None,
        headlines: Mapping[str, str] | None = None,
        demo: Demo | None = None,
        recorder: Recorder | None = None,
        past_source: str | None = None,
        inflight: InFlight | None = None,
    ) -> None:
        super().__init__()
        self.store = Store(inventory, baselines, settings.slo, headlines)
        self.feeds = tuple(feeds)
        self.operations = operations
        self.settings = settings
        self.readonly = readonly
        self.fleet_label = fleet_label or str(inventory.root)
        self.clock = clock
        self.persist_theme = persist_theme
        self.demo = demo
        self.recorder = recorder  # the history store's; it only queues rows (`cockpit.history`)
        self.inflight = inflight  # records this cockpit's operations on their nodes
        self.past_source = past_source  # a Prometheus URL `h` reads the past from, else the store
        self._sampled_at = float("-inf")
        self._history_problem: str | None = None
        # perf_counter() once a frame showing a LIVE node with its GPU and memory is painted
        self.first_useful_frame: float | None = None
        self._first_flush = False  # a flush for the first frame is queued
        themes = load_themes(*theme_dirs)
        self.cockpit_themes = [t.name for t in themes]
        for theme in themes:
            self.register_theme(theme)
        wanted = settings.theme if settings.theme in self.available_themes else DEFAULT_THEME
        self.theme = wanted if wanted in self.available_themes else "textual-dark"
        self._bad_keymap = sorted(set(settings.keymap) - BINDING_IDS)
        self.keymap_overrides = {
            k: v for k, v in settings.keymap.items() if k not in self._bad_keymap
        }
        self.set_keymap(self.keymap_overrides)

    def on_mount(self) -> None:
        self.push_screen(MainScreen())
        if self._bad_keymap:
            known = ", ".join(b.id for b in (*MAIN_BINDINGS, *TAIL_BINDINGS) if b.id)
            self.notify(
                f"{self.settings.path}: unknown key id(s) {', '.join(self._bad_keymap)} "
                f"(known: {known})",
                severity="warning",
                timeout=10,
            )
        for breakage in self.store.inventory.broken:  # loaded partially (`cli.usable`)
            self.notify(breakage.left_out(), severity="warning", timeout=20)
        for feed in self.feeds:
            self.run_worker(self._pump(feed), name=feed.name, group="feeds", exit_on_error=False)

    async def _pump(self, feed: Feed) -> None:
        """Run a feed for the app's lifetime; a feed that fails is shown and restarted (backoff)."""
        failures = 0
        while True:
            try:
                async for batch in feed.batches():
                    for item in batch:  # in order: the store's semantics depend on it
                        self.post_message(message_for(item))
                    failures = 0
                return
            except Exception as exc:  # a bug or an I/O error in a feed must not end the app
                failures += 1
                pause = FEED_BACKOFF.delay(failures)
                why = f"{type(exc).__name__}: {exc}"
                self.notify(
                    f"{feed.name} feed failed ({why}); retrying in {pause:g}s",
                    severity="error",
                    timeout=8,
                )
            await asyncio.sleep(pause)

    # ------------------------------------------------------------------ inputs → store

    def on_node_polled(self, message: NodePolled) -> None:
        self._apply(message.result)

    def on_engine_scraped(self, message: EngineScraped) -> None:
        self._apply(message.sample)

    def on_log_lines(self, message: LogLines) -> None:
        self._apply(message.lines)

    def on_op_progress(self, message: OpProgress) -> None:
        self._apply(message.update)
        if self.recorder is not None:
            self.recorder.observe(message.update.run, message.update.event)
        if self.inflight is not None:
            self.inflight.observe(message.update.event, message.update.run)

    def on_op_finished(self, message: OpFinished) -> None:
        self._apply(message.ended)
        if self.recorder is not None:
            self.recorder.ended(message.ended.run, message.ended.why)
        if self.inflight is not None:
            self.inflight.ended(message.ended.run)

    def _apply(self, item: StoreInput) -> None:
        self.store.apply(item)
        if self.first_useful_frame is None and not self._first_flush:
            # until the first useful frame, facts go on screen as soon as the messages queued
            # with them are applied, not a frame later
            self._first_flush = True
            self.call_later(self._flush_first)

    def _flush_first(self) -> None:
        self._first_flush = False
        screen = self.screen_stack[-1] if self.screen_stack else None  # none left while closing
        if self.first_useful_frame is None and isinstance(screen, MainScreen) and screen.is_mounted:
            screen.flush()

    def follow_container(self, node: str, name: str, rank: RankOnNode) -> None:
        """An operation started this container: the feeds that can follow its log now do."""
        for feed in self.feeds:
            if isinstance(feed, FollowsContainers):
                feed.follow(node, name, rank)

    def node_changed(self, node: str) -> None:
        """An operation finished a step on `node` (started, stopped, removed containers): the
        feeds look at it again now instead of at their next cycle (the Lanes row follows)."""
        for feed in self.feeds:
            if isinstance(feed, RefreshesNodes):
                feed.refresh(node)

    def sample_due(self) -> float | None:
        """When (wall clock) the history next takes the fleet's figures from a frame: the screen
        paints one by then even if nothing changed. None without a history."""
        return self._sampled_at + SAMPLE_EVERY_S if self.recorder is not None else None

    def frame_shown(self, snap: FleetSnapshot) -> None:
        """Called when the panes took a snapshot; once one shows a LIVE node with its GPU and
        memory figures, the time it is painted is `first_useful_frame`. The history takes the
        fleet's figures from it (the snapshot is made for the panes anyway)."""
        if self.recorder is not None and snap.at - self._sampled_at >= SAMPLE_EVERY_S:
            self._sampled_at = snap.at
            self.recorder.sample(lane_readings(snap), node_readings(snap), snap.at)
            problem = self.recorder.problem
            if problem and problem != self._history_problem:  # said once, not every second
                self._history_problem = problem
                self.notify(f"history: {problem}", severity="warning", timeout=10)
        if self.first_useful_frame is None and any(
            n.health is NodeHealth.LIVE and n.gpu is not None and n.memory is not None
            for n in snap.nodes
        ):
            self.screen.call_after_refresh(self._first_useful_frame_painted)

    def _first_useful_frame_painted(self) -> None:
        if self.first_useful_frame is None:
            self.first_useful_frame = time.perf_counter()
            main = next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)
            if main is not None:
                main.reveal()

    async def terminate(self, signum: int, rolled_back: Callable[[], None] = lambda: None) -> None:
        """SIGTERM/SIGHUP: the running operations are cancelled (each rolls back), then the app
        exits with 128 + the signal's number. `rolled_back` runs in between, in this task (a done
        callback would wait for a loop iteration that a blocked shutdown never gives)."""
        main = next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)
        if main is not None:
            self.notify("signal received: rolling back the running operations", severity="warning")
            await main.cancel_operations()
        rolled_back()
        self.exit(return_code=128 + signum)

    def cycle_theme(self) -> str:
        """Next cockpit theme; the choice is saved to the user's `tui.toml`, except in a browser
        (`cockpit serve`): the viewer is not the user whose file it is."""
        names = self.cockpit_themes or [self.theme]
        index = (names.index(self.theme) + 1) % len(names) if self.theme in names else 0
        self.theme = names[index]
        if self.persist_theme and not self.is_web:  # two fsyncs (~10 ms): off the event loop
            self.run_worker(self._save_theme, thread=True, group="settings")
        return self.theme

    def _save_theme(self) -> None:
        with _SAVING:  # one save at a time, each writing the theme of its moment: the last wins
            try:
                save_theme(self.settings.path, self.theme)
            except CockpitError as exc:  # e.g. tui.toml broken by hand meanwhile: left as it is
                self.call_from_thread(self.notify, str(exc), severity="error")

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """The palette lists the main screen's keys (same bindings as the footer and `?`)."""
        for command in super().get_system_commands(screen):
            if command.title not in TEXTUAL_DUPLICATES:
                yield command
        main = next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)
        if main is None:
            return
        hidden = {"quit", "help"} | main.footer_hides
        if self.demo is None:
            hidden |= DEMO_ONLY
        for binding in MAIN_BINDINGS:
            if binding.action in hidden or main.check_action(binding.action, ()) is False:
                continue  # e.g. `fix` with no refusal to mend: the palette offers what works
            yield SystemCommand(
                binding.tooltip or binding.description,  # what palette searches match
                f"key: {binding.key_display or binding.key}",
                partial(main.run_action, binding.action),
            )
