"""Shell completion: `cockpit completion bash|zsh|fish` prints the script, and the lane, recipe and
cluster options complete from the inventory (click's own completion protocol).

`with_completion` is applied by the command group to every command it loads, so no option has to
remember it; this module imports only click until a name is actually completed.
"""

from __future__ import annotations

from typing import Literal

import click
from click.shell_completion import CompletionItem, get_completion_class

SHELLS = ("bash", "zsh", "fish")
COMPLETE_VAR = "_COCKPIT_COMPLETE"
Kind = Literal["recipe", "cluster"]
COMPLETED: dict[str, Kind] = {"--recipe": "recipe", "--lane": "recipe", "--cluster": "cluster"}
"""Options whose values are inventory names (a lane is named by its recipe)."""


class InventoryName(click.types.StringParamType):
    """A string that completes from the inventory's recipe or cluster names."""

    def __init__(self, kind: Kind) -> None:
        self.kind = kind

    def shell_complete(
        self, ctx: click.Context, param: click.Parameter, incomplete: str
    ) -> list[CompletionItem]:
        names = inventory_names(ctx, self.kind)
        return [CompletionItem(n) for n in names if n.startswith(incomplete)]


def inventory_names(ctx: click.Context, kind: Kind) -> list[str]:
    """The names of `kind` in the inventory the command line names (or the default one); none
    when it cannot be read: a completion never prints an error into the shell."""
    from cockpit.config import load_inventory
    from cockpit.errors import CockpitError

    try:
        inventory = load_inventory(ctx.find_root().params.get("inventory"), partial=True)
    except (CockpitError, OSError):
        return []
    return sorted(inventory.recipes if kind == "recipe" else inventory.clusters)


def with_completion(command: click.Command) -> click.Command:
    """`command` (and its subcommands) with its inventory-name options completing."""
    for param in command.params:
        kind = next((COMPLETED[o] for o in param.opts if o in COMPLETED), None)
        if kind is not None and isinstance(param.type, click.types.StringParamType):
            param.type = InventoryName(kind)
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            with_completion(sub)
    return command


@click.command("completion")
@click.argument("shell", type=click.Choice(SHELLS))
@click.pass_context
def completion(ctx: click.Context, shell: str) -> None:
    """Print the completion script for SHELL (bash: eval "$(cockpit completion bash)" in
    ~/.bashrc; zsh likewise; fish: cockpit completion fish | source)."""
    root = ctx.find_root().command
    script = get_completion_class(shell)(root, {}, "cockpit", COMPLETE_VAR)  # type: ignore[misc]
    click.echo(script.source())


COMMANDS = [completion]
