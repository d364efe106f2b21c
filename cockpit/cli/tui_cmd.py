"""`cockpit tui` (also bare `cockpit`): the interactive cockpit on the configured inventory."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from cockpit.config import Inventory, load_inventory
from cockpit.ops.context import OpContext
from cockpit.ssh.inventory import pool_for

TOKENIZER_DIR = Path(__file__).resolve().parent.parent / "sim" / "engine" / "tokenizer"


def run_tui(
    inventory: Inventory,
    *,
    readonly: bool = False,
    reports_dir: Path = Path("reports"),
    settings_path: Path | None = None,
    fleet_label: str = "",
) -> None:
    """Open the TUI on `inventory`'s fleet until the operator quits (imports Textual lazily)."""
    from cockpit.tui.app import CockpitApp
    from cockpit.tui.feeds.fleet import FleetFeed
    from cockpit.tui.fleet_ops import FleetOperations, report_baselines
    from cockpit.tui.settings import default_settings_path, load_settings

    settings = load_settings(settings_path or default_settings_path())
    lanes = [(r.name, c) for r in inventory.recipes.values() for c in r.lane.clusters]

    async def main() -> None:
        async with pool_for(inventory) as pool:
            operations = FleetOperations(OpContext(inventory, pool), reports_dir, TOKENIZER_DIR)
            app = CockpitApp(
                inventory,
                feeds=[FleetFeed(inventory, pool)],
                operations=None if readonly else operations,
                settings=settings,
                readonly=readonly,
                fleet_label=fleet_label,
                baselines=report_baselines(reports_dir, lanes),
            )
            await app.run_async()

    asyncio.run(main())


@click.command("tui")
@click.option("--readonly", is_flag=True, help="Watch only: every key that changes a node is off.")
@click.option(
    "--reports",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("reports"),
    show_default=True,
    help="Bench reports: baselines are read from here, new reports written here.",
)
@click.pass_context
def tui(ctx: click.Context, readonly: bool, reports: Path) -> None:
    """The interactive cockpit: live fleet panes, lane keys, bench tail (`?` lists the keys)."""
    inventory = load_inventory((ctx.obj or {}).get("inventory"))
    run_tui(inventory, readonly=readonly, reports_dir=reports)


COMMANDS = [tui]
