"""Inventory and recipes: pydantic models, TOML loading with file:line errors, validation."""

from cockpit.config.inventory import (
    Inventory,
    check_inventory,
    load_inventory,
    resolve_inventory_dir,
)
from cockpit.config.models import Cluster, NcclBlock, Node, Recipe, SshSettings

__all__ = [
    "Cluster",
    "Inventory",
    "NcclBlock",
    "Node",
    "Recipe",
    "SshSettings",
    "check_inventory",
    "load_inventory",
    "resolve_inventory_dir",
]
