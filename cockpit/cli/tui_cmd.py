"""`cockpit tui` (also bare `cockpit`): the interactive cockpit on the configured inventory."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from cockpit.config import Inventory, load_inventory
from cockpit.ops.interrupt import exit_if_stuck, install
from cockpit.ssh.inventory import pool_for

if TYPE_CHECKING:
    from cockpit.tui.app import CockpitApp
    from cockpit.tui.demo import Demo

SHUTDOWN_GRACE_S = 5.0
"""After a signal, and once the running operations rolled back, the app must be gone by then."""
STUCK_CAP_S = 120.0
"""After a signal, the process is gone by then whatever happens: Textual's shutdown can block the
event loop's thread for good (its writer thread died on the lost terminal and its queue is full),
and then neither the rollback's end nor a later signal is ever handled. Long enough for any
operation's rollback (a launch removing its ranks takes seconds)."""


def run_tui(
    inventory: Inventory,
    *,
    readonly: bool = False,
    reports_dir: Path = Path("reports"),
    demo: Demo | None = None,
    history: Path | None = None,
    feed_socket: Path | None = None,
) -> None:
    """Open the TUI on `inventory`'s fleet until the operator quits (the nodes are probed while
    Textual loads: `cockpit.tui.launch`); it records into the history store at `history`
    (default: the user's). With `feed_socket` (a `cockpit serve` browser session) it is read-only
    and reads the serve process's shared feed instead of connecting to the nodes."""
    from cockpit.history.prometheus import prometheus_url
    from cockpit.history.recorder import Recorder
    from cockpit.history.settings import history_table
    from cockpit.paths import tui_settings_file
    from cockpit.tui.launch import fleet_app, viewer_app
    from cockpit.tui.settings import load_settings

    settings = load_settings(tui_settings_file())
    recorder = Recorder.open(history)
    past_source = prometheus_url(history_table().source)

    @asynccontextmanager
    async def opened() -> AsyncIterator[CockpitApp]:
        if feed_socket is not None:
            yield viewer_app(
                inventory,
                settings,
                feed_socket,
                reports_dir=reports_dir,
                recorder=recorder,
                past_source=past_source,
            )
            return
        async with (
            pool_for(inventory) as pool,
            fleet_app(
                inventory,
                pool,
                settings,
                reports_dir=reports_dir,
                readonly=readonly,
                demo=demo,
                recorder=recorder,
                past_source=past_source,
            ) as app,
        ):
            yield app

    async def main() -> int:
        async with opened() as app:
            ending: list[asyncio.Task[None]] = []
            cancels: list[Callable[[], None]] = []

            def on_signal(signum: int) -> None:  # a second signal aborts at once
                def rolled_back() -> None:  # from then on the app has SHUTDOWN_GRACE_S
                    cancels.append(exit_if_stuck(128 + signum, SHUTDOWN_GRACE_S))

                ending.append(asyncio.create_task(app.terminate(signum, rolled_back)))

            def at_once(signum: int) -> None:  # the loop may never run `on_signal`
                cancels.append(exit_if_stuck(128 + signum, STUCK_CAP_S))

            undo = install(asyncio.get_running_loop(), on_signal, at_once)
            try:
                await app.run_async()
            finally:
                undo()
                for cancel in cancels:
                    cancel()
                await asyncio.to_thread(recorder.close)  # the last buckets, the queue
            return app.return_code or 0

    code = asyncio.run(main())
    if code:
        sys.exit(code)


@click.command("tui")
@click.option("--readonly", is_flag=True, help="Watch only: every key that changes a node is off.")
@click.option(
    "--reports",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("reports"),
    show_default=True,
    help="Bench reports: baselines are read from here, new reports written here.",
)
@click.option(
    "--feed-socket",
    type=click.Path(dir_okay=False, path_type=Path),
    hidden=True,  # `cockpit serve` gives it to its browser sessions
    help="Read the fleet from this `cockpit serve` feed socket (read-only, no SSH of its own).",
)
@click.pass_context
def tui(ctx: click.Context, readonly: bool, reports: Path, feed_socket: Path | None) -> None:
    """The interactive cockpit: live fleet panes, lane keys, bench tail (`?` lists the keys)."""
    obj = ctx.obj or {}  # `cockpit demo` puts its fleet's inventory and its opening act here
    inventory = load_inventory(obj.get("inventory"), partial=True)  # the app says what is out
    run_tui(
        inventory,
        readonly=readonly,
        reports_dir=reports,
        demo=obj.get("demo"),
        history=obj.get("history"),
        feed_socket=feed_socket,
    )


COMMANDS = [tui]
