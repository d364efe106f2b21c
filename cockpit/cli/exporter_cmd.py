"""`cockpit exporter`: serve the fleet as Prometheus metrics (`cockpit.exporter`).

Loopback only unless `--allow-remote`: the metrics name every node, lane and model of the fleet,
and the server has no authentication of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
from pathlib import Path

import click

from cockpit.errors import InputError

DEFAULT_LISTEN = "127.0.0.1:9464"


def parse_listen(text: str) -> tuple[str, int]:
    """`HOST:PORT` (`[::1]:PORT` for IPv6) → (host, port); a malformed one is refused."""
    host, sep, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise InputError(f"--listen {text}: expected HOST:PORT, e.g. {DEFAULT_LISTEN}")
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve beyond this host


@click.command("exporter")
@click.option(
    "--listen",
    default=DEFAULT_LISTEN,
    show_default=True,
    help="HOST:PORT to serve /metrics on; loopback only unless --allow-remote.",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Allow a --listen address beyond loopback (the metrics name the whole fleet).",
)
@click.option(
    "--reports",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("reports"),
    show_default=True,
    help="Bench reports: each lane's newest one gives the bench figures.",
)
@click.pass_context
def exporter(ctx: click.Context, listen: str, allow_remote: bool, reports: Path) -> None:
    """Serve the fleet as Prometheus metrics (OpenMetrics text) for a team's Prometheus."""
    host, port = parse_listen(listen)
    if not allow_remote and not is_loopback(host):
        raise InputError(
            f"--listen {listen} is not a loopback address: add --allow-remote to serve the "
            "fleet's metrics beyond this host"
        )
    from cockpit.cli.recording import cli_recorder
    from cockpit.cli.usable import usable_inventory
    from cockpit.exporter.families import SnapshotCollector
    from cockpit.exporter.serve import export, serving
    from cockpit.history.recorder import Recorder
    from cockpit.ssh.inventory import pool_for

    inventory = usable_inventory((ctx.obj or {}).get("inventory"))
    collector = SnapshotCollector()

    async def run(recorder: Recorder) -> None:
        async with pool_for(inventory) as pool:
            await export(inventory, pool, collector, reports, recorder=recorder)

    with contextlib.ExitStack() as stack:
        try:
            bound = stack.enter_context(serving(host, port, collector))
        except OSError as exc:  # the address is taken or not this host's
            raise InputError(f"--listen {listen}: {exc.strerror or exc}") from None
        click.echo(f"serving http://{listen.rpartition(':')[0]}:{bound}/metrics", err=True)
        recorder = stack.enter_context(cli_recorder())  # the fleet's figures, in the history
        asyncio.run(run(recorder))


COMMANDS = [exporter]
