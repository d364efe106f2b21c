"""The inventory a command runs on: a mistake inside one cluster's table leaves the rest usable.

A mistake inside one cluster's table takes out that cluster (one in a node's table, every cluster
using the node); a command on another cluster runs, with a warning line naming what was left
out; one on a broken cluster is refused with the mistake (exit 2: `Inventory.cluster`). A
mistake anywhere else (broken TOML, a recipe, `[ssh]`) still refuses every command, and
`cockpit validate` lists them all.
"""

from __future__ import annotations

from pathlib import Path

import click

from cockpit.config import Inventory, load_inventory


def usable_inventory(root: Path | None, target: str | None = None) -> Inventory:
    """The inventory without its broken clusters, each said once on stderr (but `target`'s,
    which the refusal names); a `target` cluster the inventory does not name at all (a typo) is
    refused here, in one line on stderr, before the command asks any node."""
    inventory = load_inventory(root, partial=True)
    for breakage in inventory.broken:
        if target is None or target not in breakage.clusters:
            click.echo(f"warning: {breakage.left_out()}", err=True)
    if target is not None and not any(target in b.clusters for b in inventory.broken):
        inventory.cluster(target)
    return inventory
