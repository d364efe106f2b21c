"""The `cockpit` command: a click group; each command group lives in its own module."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from cockpit.cli.completion import COMPLETE_VAR, with_completion
from cockpit.cli.guided import GuidedGroup, usage_line
from cockpit.errors import CockpitError, InputError
from cockpit.redact import shown
from cockpit.startup import pause_collector, resume_collector

err_console = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)
"""stderr's one-line errors; no emoji codes (`--listen 127.0.0.1:-1:` printed a thumbs-down)."""


# Each command lives in its own module, imported only when that command runs, so a quick command
# (`lanes`, `render`) does not pay for Textual, asyncssh and the bench at start-up.
COMMAND_MODULES = {
    "lanes": "inventory_cmds",
    "validate": "inventory_cmds",
    "render": "inventory_cmds",
    "fit": "fit_cmd",
    "status": "status_cmd",
    "sim": "sim_cmds",
    "demo": "sim_cmds",
    "launch": "ops_cmds",
    "stop": "ops_cmds",
    "sync-image": "ops_cmds",
    "sync-model": "ops_cmds",
    "switch": "ops_cmds",
    "bench": "bench_cmds",
    "probe": "bench_cmds",
    "report": "report_cmds",
    "tui": "tui_cmd",
    "logs": "logs_cmd",
    "exporter": "exporter_cmd",
    "serve": "serve_cmd",
    "history": "history_cmd",
    "recipe": "recipe_cmds",
    "import": "recipe_cmds",
    "completion": "completion",
}
COMMAND_HELP = {
    "lanes": "Every recipe with the clusters it runs on, its TP size, image and model.",
    "validate": "Check every file of the inventory; list every problem (exit code 2 if any).",
    "render": "Dry run: print the exact command that would start each rank, per node.",
    "fit": "Memory per rank: weights, runtime and KV pool, and whether the lane fits (no launch).",
    "status": "Nodes: reachable, GPU, memory (unified-aware), containers by lane, recipe images.",
    "sim": "A simulated DGX Spark fleet on loopback SSH endpoints (for the demo and the tests).",
    "demo": "Open the cockpit on a simulated fleet that lives as long as it does.",
    "launch": "Preflight, start and follow a lane to ready (rolled back on failure).",
    "stop": "Stop and remove a lane's containers; verify the GPUs are released.",
    "sync-image": "Copy the lane's image node to node, re-attach its digest, verify its id.",
    "sync-model": "Copy the recipe's model snapshot node to node to the nodes lacking it; verify.",
    "switch": (
        "Stop what occupies the cluster, sync if needed, launch the lane (one confirmed plan)."
    ),
    "bench": "Quality + perf + depth sweep at c1/c2, live, with honesty checks and a report.",
    "probe": "8-token health check, then one stream observed at the socket (who flushes late?).",
    "report": "Read bench reports: show one, compare two, trend a lane's.",
    "tui": "The interactive cockpit: live fleet panes, lane keys, bench tail (`?` lists the keys).",
    "logs": "Print a lane's container logs (stdout and stderr), each line as `node/rRANK | line`.",
    "exporter": "Serve the fleet as Prometheus metrics (OpenMetrics text) for a team's Prometheus.",
    "serve": (
        "Serve the TUI read-only in a browser: one `cockpit tui --readonly` per browser session, "
        "all reading one fleet feed."
    ),
    "history": "What ran where and when, boots, and lane and node figures, from the local history.",
    "recipe": "Recipes from other tools.",
    "import": "Recipes from sparkrun or eugr's spark-vllm-docker (as `cockpit recipe import`).",
    "completion": (
        'Print the completion script for SHELL (bash: eval "$(cockpit completion bash)" in '
        "~/.bashrc; zsh likewise; fish: cockpit completion fish | source)."
    ),
}
"""The line `cockpit --help` lists each command by: each command's own short help (its docstring's
first sentence; tests/test_cli_entry.py holds them equal), kept here so that listing the commands
imports none of them (asyncssh, Textual and the bench made `--help` take 0.8 s)."""
OPENS_TUI = {"tui", "demo"}
"""Commands that resume the garbage collector themselves, once their first frame is painted."""
NEEDS_SIMULATOR = {name for name, module in COMMAND_MODULES.items() if module == "sim_cmds"}
"""The commands of the one module that imports the simulator (tests/test_import_contract.py)."""
NOT_INSTALLED = "(not installed: pip install -e ./sim)"
SIMULATOR = "cockpit_sim"
"""The simulator's package: a distribution of its own (`sim/` of the repository, cockpit-sim)."""


def simulator_missing(cmd_name: str) -> str:
    """The one line that says what to install when `cmd_name` needs the absent simulator."""
    return (
        f"cockpit {cmd_name} needs the simulated fleet, which is not installed: "
        "pip install -e ./sim in the cockpit checkout (distribution cockpit-sim)"
    )


def _needs_simulator(cmd_name: str) -> click.Command:
    """`cmd_name` (sim, demo) without the simulator: whatever follows, that one line, exit 2."""

    def refuse() -> None:
        raise InputError(simulator_missing(cmd_name))

    return click.Command(
        cmd_name,
        callback=refuse,
        short_help=NOT_INSTALLED,
        add_help_option=False,
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from cockpit.version import version_line

    click.echo(version_line())
    ctx.exit()


class LazyGroup(GuidedGroup):
    """A group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMAND_MODULES)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands and their lines from COMMAND_HELP, as click lays them out, without
        importing them (`sim` and `demo` say what to install when the simulator is absent)."""
        names = self.list_commands(ctx)
        absent = importlib.util.find_spec(SIMULATOR) is None
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = [
            (name, NOT_INSTALLED if absent and name in NEEDS_SIMULATOR else COMMAND_HELP[name])
            for name in names
        ]
        with formatter.section("Commands"):
            formatter.write_dl(
                [(name, click.Command(name, help=h).get_short_help_str(limit)) for name, h in rows]
            )

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module_name = COMMAND_MODULES.get(cmd_name)
        if module_name is None:
            return None
        try:
            module = importlib.import_module(f"cockpit.cli.{module_name}")
        except ModuleNotFoundError as exc:
            absent = sys.modules.get(SIMULATOR) is None
            if not (absent and (exc.name or "").partition(".")[0] == SIMULATOR):
                raise
            return _needs_simulator(cmd_name)
        if cmd_name not in OPENS_TUI:
            resume_collector()  # loaded: collect as usual from here on
        return with_completion(next(c for c in module.COMMANDS if c.name == cmd_name))


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    invoke_without_command=True,
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and the commit it was built from, then exit.",
)
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


def main() -> None:
    """Console-script entry: CockpitError becomes one line on stderr and its exit code."""
    pause_collector()  # until the command is loaded (cockpit.startup)
    try:
        result = cli.main(standalone_mode=False, complete_var=COMPLETE_VAR)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.UsageError as exc:  # a bad option or value: one line, not click's four
        err_console.print(f"[red]error:[/red] {escape(shown(usage_line(exc)))}")
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.Abort as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):  # click's wrapping of a Ctrl-C
            sys.exit(130)  # 128 + SIGINT, as for every other command
        err_console.print("aborted")
        sys.exit(1)
    except CockpitError as exc:
        for line in str(exc).splitlines():
            err_console.print(f"[red]error:[/red] {escape(shown(line))}")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    # With standalone_mode off, click returns ctx.exit()'s code instead of raising.
    sys.exit(result if isinstance(result, int) else 0)
