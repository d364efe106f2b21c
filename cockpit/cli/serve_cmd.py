"""`cockpit serve`: the TUI, read-only, in a browser (`textual-serve`).

Each browser session gets its own `cockpit tui --readonly` process on the same inventory: the
flag is on the command line the server runs, so no key a browser sends can change a node (the
read-only app has no operations to run). The sessions read one fleet feed that this process runs
(`--feed-socket`): viewers do not multiply the connections to the nodes. At most `--max-viewers`
sessions; websockets from the server's own page only (`cockpit.tui.web`).

Loopback only unless `--allow-remote`, which requires a token: generated at each start, written to
a file only this user can read (never printed: a terminal's scrollback or a service's journal
keeps what is printed), given once as `?token=`, then an HttpOnly cookie. A token rather than a
password file: nothing for the operator to choose or keep, it cannot be guessed, and a restart
revokes every viewer.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import shutil
import socket
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from cockpit.cli.bounds import Bounded
from cockpit.cli.exporter_cmd import is_loopback, parse_listen
from cockpit.errors import InputError
from cockpit.paths import state_dir

if TYPE_CHECKING:
    from cockpit.config import Inventory
    from cockpit.tui.feeds import Feed

DEFAULT_LISTEN = "127.0.0.1:8765"
DEFAULT_MAX_VIEWERS = 8  # each is a TUI process (~90 MiB): a team's screens, not a crowd
MAX_VIEWERS = 64
FEED_SOCKET = "feed.sock"


def served_command(inventory_dir: Path, reports: Path, feed_socket: Path) -> str:
    """The shell command textual-serve runs for each browser session: the read-only TUI on
    `inventory_dir`, reading `feed_socket`, with this interpreter (absolute paths: the server's
    folder is not the app's concern)."""
    return shlex.join(
        [
            sys.executable,
            "-m",
            "cockpit",
            "--inventory",
            str(inventory_dir.resolve()),
            "tui",
            "--readonly",
            "--feed-socket",
            str(feed_socket),
            "--reports",
            str(reports.resolve()),
        ]
    )


def exposure(url: str, max_viewers: int, token_file: Path | None) -> list[str]:
    """What the server shows, and to whom, said at its start."""
    lines = [
        f"serving {url}: the fleet's read-only view (nodes, lanes, GPU and engine figures, "
        f"the lane containers' logs) to at most {max_viewers} viewers at once"
    ]
    if token_file is not None:
        lines.append(
            f"beyond this host, to whoever has the token in {token_file} (readable by you only; "
            f"a new one at each start): open {url}/?token=<that token>"
        )
    return lines


@contextlib.contextmanager
def token_file(host: str, port: int) -> Iterator[tuple[str, Path]]:
    """A fresh token in a file only this user can read, removed when the server ends."""
    folder = state_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / f"serve-{host}-{port}.token"
    token = secrets.token_urlsafe(32)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a previous server's: its mode is not to be trusted
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(token + "\n")
    try:
        yield token, path
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


@asynccontextmanager
async def fleet_source(inventory: Inventory) -> AsyncIterator[Feed]:
    """The serve process's one fleet feed, with its own SSH pool (opened while viewers watch)."""
    from cockpit.ssh.inventory import pool_for
    from cockpit.tui.feeds.fleet import FleetFeed

    async with pool_for(inventory) as pool:
        yield FleetFeed(inventory, pool)


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
    help="Allow a --listen address beyond loopback; viewers then need the token (in a file "
    "named at start).",
)
@click.option(
    "--max-viewers",
    type=Bounded(int, 1, MAX_VIEWERS),
    default=DEFAULT_MAX_VIEWERS,
    show_default=True,
    help="Browser sessions at once; one more is told to try again later.",
)
@click.option(
    "--reports",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("reports"),
    show_default=True,
    help="Bench reports the served TUI reads its baselines from.",
)
@click.pass_context
def serve(
    ctx: click.Context, listen: str, allow_remote: bool, max_viewers: int, reports: Path
) -> None:
    """Serve the TUI read-only in a browser: one `cockpit tui --readonly` per browser session,
    all reading one fleet feed."""
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
    inventory = load_inventory(inventory_dir)  # a broken one is refused here, not in a browser
    from cockpit.ssh.inventory import pool_for
    from cockpit.tui.feeds.shared import FeedHub
    from cockpit.tui.web import WebServer, loopback_hosts

    pool_for(inventory)  # its refusals (a known_hosts that cannot be read…) now, not in the feed
    refuse_unbindable(host, port, listen)
    every_address = host in ("0.0.0.0", "::")  # a browser connects to one of them, not to this
    url = f"http://<this host>:{port}" if every_address else f"http://{listen}"
    with contextlib.ExitStack() as stack:
        folder = Path(tempfile.mkdtemp(prefix="cockpit-serve-"))  # 0700: this user's only
        stack.callback(shutil.rmtree, folder, ignore_errors=True)
        hub = FeedHub(lambda: fleet_source(inventory), folder / FEED_SOCKET)
        command = served_command(inventory_dir, reports, hub.path)
        token, where = stack.enter_context(token_file(host, port)) if allow_remote else (None, None)
        server = WebServer(
            command,
            host=host,
            port=port,
            title="cockpit (read-only)",
            hub=hub,
            max_viewers=max_viewers,
            token=token,
            hosts=None if allow_remote else loopback_hosts(host, port),
        )
        for line in exposure(url, max_viewers, where):
            click.echo(line, err=True)
        server.serve()
    if server.exit_code:
        sys.exit(server.exit_code)


COMMANDS = [serve]
