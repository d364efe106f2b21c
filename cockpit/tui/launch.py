"""Start-up of the cockpit on a fleet: the nodes first, Textual while they answer.

The first useful frame needs two slow things: the nodes' first probe lines (SSH handshakes, then
the remote tools starting) and the app itself (importing Textual and the panes, the first
layout). They overlap here: the probes start before the TUI modules are imported, and the import
runs in a thread so the event loop keeps serving the SSH handshakes meanwhile. With nodes that
have their own CPUs the facts are often in when the app mounts; a simulated fleet on the
cockpit's own cores competes with the import instead (benchmarks/RESULTS.md, tui_startup).

This module imports nothing heavy itself: `cockpit tui` reaches the SSH connect as soon as the
inventory and asyncssh are loaded.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from cockpit.status.poller import FleetPoller

if TYPE_CHECKING:
    from cockpit.config import Inventory
    from cockpit.history.recorder import Recorder
    from cockpit.ssh import SshPool
    from cockpit.tui.app import CockpitApp
    from cockpit.tui.demo import Demo
    from cockpit.tui.feeds.fleet import FleetFeed
    from cockpit.tui.settings import TuiSettings

APP_MODULES = ("cockpit.tui.app", "cockpit.tui.feeds.fleet", "cockpit.tui.fleet_ops")
"""What the app needs before its first frame (the operations load on first use of their key)."""


def import_app_modules() -> None:
    """Import the TUI: Textual, the panes, the store, the feed; meant for a thread."""
    for name in APP_MODULES:
        importlib.import_module(name)


@asynccontextmanager
async def early_fleet_feed(inventory: Inventory, pool: SshPool) -> AsyncIterator[FleetFeed]:
    """The fleet feed with its probes already running and the TUI modules imported meanwhile;
    the probes stop when the block ends."""
    async with FleetPoller(pool, list(inventory.nodes)) as poller:
        await asyncio.to_thread(import_app_modules)
        from cockpit.tui.feeds.fleet import FleetFeed

        yield FleetFeed(inventory, pool, poller=poller)


@asynccontextmanager
async def fleet_app(
    inventory: Inventory,
    pool: SshPool,
    settings: TuiSettings,
    *,
    reports_dir: Path,
    tokenizer_dir: Path | None = None,  # None: each lane's own tokenizer, from its snapshot
    readonly: bool = False,
    persist_theme: bool = True,
    demo: Demo | None = None,
    recorder: Recorder | None = None,
    past_source: str | None = None,
) -> AsyncIterator[CockpitApp]:
    """The cockpit on `inventory`'s fleet as `cockpit tui` opens it, its probes already running;
    the caller runs it (`run_async`, or `run_test` headless)."""
    async with early_fleet_feed(inventory, pool) as feed:
        from cockpit.ops.context import OpContext
        from cockpit.ops.inflight import InFlight
        from cockpit.tui.app import CockpitApp
        from cockpit.tui.fleet_ops import FleetOperations, report_baselines, report_headlines

        operations = FleetOperations(OpContext(inventory, pool), reports_dir, tokenizer_dir)
        inflight = InFlight(pool, inventory)  # every other cockpit sees this one's operations
        try:
            yield CockpitApp(
                inventory,
                feeds=[feed],
                operations=None if readonly else operations,
                settings=settings,
                readonly=readonly,
                baselines=report_baselines(reports_dir, inventory),
                headlines=report_headlines(reports_dir),
                persist_theme=persist_theme,
                demo=demo,
                recorder=recorder,
                past_source=past_source,
                inflight=inflight,
            )
        finally:
            await inflight.aclose()


def viewer_app(
    inventory: Inventory,
    settings: TuiSettings,
    feed_socket: Path,
    *,
    reports_dir: Path,
    recorder: Recorder | None = None,
    past_source: str | None = None,
) -> CockpitApp:
    """A `cockpit serve` browser session's app: read-only, its facts from the serve process's
    shared feed (`cockpit.tui.feeds.shared`), no SSH connection of its own."""
    from cockpit.tui.app import CockpitApp
    from cockpit.tui.feeds.shared import SharedFeed
    from cockpit.tui.fleet_ops import report_baselines, report_headlines

    return CockpitApp(
        inventory,
        feeds=[SharedFeed(feed_socket)],
        settings=settings,
        readonly=True,
        baselines=report_baselines(reports_dir, inventory),
        headlines=report_headlines(reports_dir),
        recorder=recorder,
        past_source=past_source,
    )
