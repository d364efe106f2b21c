"""The `cockpit` command: a click group; each command group lives in its own module."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from cockpit import __version__
from cockpit.errors import CockpitError

err_console = Console(stderr=True, highlight=False, soft_wrap=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, invoke_without_command=True)
@click.version_option(__version__, prog_name="cockpit")
@click.option(
    "--inventory",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="COCKPIT_INVENTORY",
    help="Folder with clusters.toml and the recipes (default: $COCKPIT_INVENTORY, "
    "the user config, then the project's recipes/).",
)
@click.pass_context
def cli(ctx: click.Context, inventory: Path | None) -> None:
    """Run vLLM lanes on a DGX Spark fleet: watch, launch, stop, sync, bench, switch."""
    ctx.obj = {"inventory": inventory}
    if ctx.invoked_subcommand is None:  # bare `cockpit` opens the TUI
        from cockpit.cli.tui_cmd import tui

        ctx.invoke(tui)


def _register() -> None:
    """Attach the command modules (imported here so `--help` lists every command)."""
    from cockpit.cli import bench_cmds, inventory_cmds, ops_cmds, sim_cmds, status_cmd, tui_cmd

    for command in [
        *inventory_cmds.COMMANDS,
        *status_cmd.COMMANDS,
        *sim_cmds.COMMANDS,
        *ops_cmds.COMMANDS,
        *bench_cmds.COMMANDS,
        *tui_cmd.COMMANDS,
    ]:
        cli.add_command(command)


def main() -> None:
    """Console-script entry: CockpitError becomes one line on stderr and its exit code."""
    _register()
    try:
        result = cli.main(standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.Abort:
        err_console.print("aborted")
        sys.exit(1)
    except CockpitError as exc:
        for line in str(exc).splitlines():
            err_console.print(f"[red]error:[/red] {escape(line)}")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    # With standalone_mode off, click returns ctx.exit()'s code instead of raising.
    sys.exit(result if isinstance(result, int) else 0)
