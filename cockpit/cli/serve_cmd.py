"""`cockpit serve`: the TUI, read-only, in a browser (`textual-serve`).

Each browser session gets its own `cockpit tui --readonly` process on the same inventory: the
flag is on the command line the server runs, so no key a browser sends can change a node (the
read-only app has no operations to run). Loopback only unless `--allow-remote`: the page has no
authentication of its own and shows the whole fleet.
"""

from __future__ import annotations

import shlex
import socket
import sys
from pathlib import Path

import click

from cockpit.cli.exporter_cmd import is_loopback, parse_listen
from cockpit.errors import InputError

DEFAULT_LISTEN = "127.0.0.1:8765"


def served_command(inventory_dir: Path, reports: Path) -> str:
    """The shell command textual-serve runs for each browser session: the read-only TUI on
    `inventory_dir`, with this interpreter (absolute paths: the server's folder is not the app's
    concern)."""
    return shlex.join(
        [
            sys.executable,
            "-m",
            "cockpit",
            "--inventory",
            str(inventory_dir.resolve()),
            "tui",
            "--readonly",
            "--reports",
            str(reports.resolve()),
        ]
    )


def refuse_unbindable(host: str, port: int, listen: str) -> None:
    """Refuse, in one line, an address taken or not this host's, before textual-serve's banner
    (it binds only after printing it)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as aiohttp binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise InputError(f"--listen {listen}: {exc.strerror or exc}") from None


@click.command("serve")
@click.option(
    "--listen",
    default=DEFAULT_LISTEN,
    show_default=True,
    help="HOST:PORT to serve the web view on; loopback only unless --allow-remote.",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Allow a --listen address beyond loopback (the page shows the whole fleet, no login).",
)
@click.option(
    "--reports",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("reports"),
    show_default=True,
    help="Bench reports the served TUI reads its baselines from.",
)
@click.pass_context
def serve(ctx: click.Context, listen: str, allow_remote: bool, reports: Path) -> None:
    """Serve the TUI read-only in a browser: one `cockpit tui --readonly` per browser session."""
    host, port = parse_listen(listen)
    if port == 0:  # the page names the port its websocket connects back to
        raise InputError(
            f"--listen {listen}: the web view needs a fixed port, e.g. {DEFAULT_LISTEN}"
        )
    if not allow_remote and not is_loopback(host):
        raise InputError(
            f"--listen {listen} is not a loopback address: add --allow-remote to serve the "
            "fleet's read-only view beyond this host"
        )
    from cockpit.config import load_inventory
    from cockpit.config.inventory import resolve_inventory_dir

    inventory_dir = resolve_inventory_dir((ctx.obj or {}).get("inventory"))
    load_inventory(inventory_dir)  # a broken inventory is refused here, not in every browser
    from cockpit.tui.web import WebServer

    command = served_command(inventory_dir, reports)
    server = WebServer(command, host=host, port=port, title="cockpit (read-only)")
    refuse_unbindable(host, port, listen)
    click.echo(f"serving http://{listen} (read-only: {command})", err=True)
    server.serve()
    if server.exit_code:
        sys.exit(server.exit_code)


COMMANDS = [serve]
