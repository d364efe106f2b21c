"""The SSH pool of an inventory: its nodes, and its [ssh] paths resolved from its folder."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cockpit.config import Inventory
from cockpit.config.inventory import known_hosts_problem, ssh_file_problems
from cockpit.errors import InputError
from cockpit.ssh.address import Settings
from cockpit.ssh.pool import SshPool


def settings_of(inventory: Inventory) -> Settings:
    """The inventory's [ssh] block with its paths made absolute."""
    ssh = inventory.ssh
    return Settings(
        known_hosts=inventory.path(ssh.known_hosts),
        identity_files=tuple(p for f in ssh.identity_files if (p := inventory.path(f))),
        connect_timeout=ssh.connect_timeout,
    )


def pool_for(inventory: Inventory, nodes: Iterable[str] | None = None, **options: Any) -> SshPool:
    """A pool over `nodes` (default: every node); `config_file` (if set) replaces ~/.ssh/config.
    A configured known_hosts, identity file or ssh config that cannot be read is refused first
    (exit code 2)."""
    names = list(nodes) if nodes is not None else list(inventory.nodes)
    known_hosts = known_hosts_problem(inventory, names)
    problems = [*([known_hosts] if known_hosts else []), *ssh_file_problems(inventory)]
    if problems:
        raise InputError(problems)
    config = inventory.path(inventory.ssh.config_file)
    return SshPool(
        [inventory.nodes[name] for name in names],
        settings_of(inventory),
        config=[config] if config else None,
        **options,
    )
