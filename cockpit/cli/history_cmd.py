"""`cockpit history ops|boots|lane|node|benches`: what the local history store kept.

Read-only, fast (no inventory, no SSH): one query on the SQLite file, printed as a table, JSON
or CSV. Times are local in the table, ISO 8601 UTC in JSON and CSV.
"""

from __future__ import annotations

import contextlib
import csv
import difflib
import json
import socket
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from cockpit.cli.guided import GuidedGroup
from cockpit.cli.output import stdout_console
from cockpit.errors import InputError
from cockpit.history.records import BootRow, OpRow
from cockpit.history.since import parse_since
from cockpit.history.store import HistoryStore
from cockpit.pids import pid_exists
from cockpit.redact import shown

console = stdout_console()
FORMATS = ["table", "json", "csv"]

Column = tuple[str, Callable[[Any], object]]
"""A column's name and how a row gives its value (a Unix time is named `at` or `*_at`)."""
WRAPPED = {"summary", "phases", "nodes", "path", "partial"}


def _since_option(default: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    return click.option(
        "--since",
        default=default,
        show_default=True,
        help="How far back: a duration (2h, 1d, 1h30m) or a time (2026-12-04T08:00Z).",
    )


_format_option = click.option("--format", "fmt", type=click.Choice(FORMATS), default="table")


@click.group("history", cls=GuidedGroup)
def history() -> None:
    """What ran where and when, boots, and lane and node figures, from the local history."""


def _cell(name: str, value: object, fmt: str) -> object:
    if value is None or (value == "" and fmt == "table"):  # none: a table says so with a dash
        return {"json": None, "table": "-"}.get(fmt, "")  # (a blank read as the next cell)
    if (name == "at" or name.endswith("_at")) and isinstance(value, float | int):
        moment = datetime.fromtimestamp(value, UTC)
        if fmt == "table":
            return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S")
        return moment.isoformat().replace("+00:00", "Z")
    if isinstance(value, float) and fmt == "table":
        return f"{value:,.1f}"
    return shown(value) if isinstance(value, str) else value


def _print(
    rows: Sequence[Any],
    columns: Sequence[Column],
    fmt: str,
    structured: Callable[[Any], dict[str, object]] | None = None,
) -> None:
    """`rows` as a table, JSON or CSV; `structured` gives a row's JSON fields that are more
    than one cell (a boot's phases on every node)."""
    records = [{name: _cell(name, get(row), fmt) for name, get in columns} for row in rows]
    if fmt == "json":
        if structured is not None:
            for record, row in zip(records, rows, strict=True):
                record.update(structured(row))
        click.echo(json.dumps(records, indent=2))
    elif fmt == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow([name for name, _ in columns])
        writer.writerows([record.values() for record in records])
    else:
        table = Table(box=None, header_style="bold", pad_edge=False, padding=(0, 1))
        for name, _ in columns:  # figures whole; the texts (a summary, phases) wrap
            table.add_column(name.removesuffix("_at"), no_wrap=name not in WRAPPED)
        for record in records:
            table.add_row(*(escape(str(v)) for v in record.values()))
        console.print(table)


def _outcome(row: OpRow) -> str:
    """Its outcome; without one, `running` while its process lives here, else `unfinished`
    (its cockpit died before writing the end, or it runs on another host)."""
    if row.outcome is not None:
        return row.outcome
    host = row.who.rpartition("@")[2]
    return "running" if host == socket.gethostname() and pid_exists(row.pid) else "unfinished"


OP_COLUMNS: list[Column] = [
    ("started_at", lambda r: r.started),
    ("op", lambda r: r.op),
    ("lane", lambda r: r.lane),
    ("cluster", lambda r: r.cluster),
    ("nodes", lambda r: ",".join(r.nodes)),
    ("who", lambda r: r.who),
    ("outcome", _outcome),
    ("seconds", lambda r: None if r.ended is None else round(r.ended - r.started, 1)),
    ("summary", lambda r: r.summary),
]


@history.command("ops")
@_since_option("7d")
@_format_option
def ops_cmd(since: str, fmt: str) -> None:
    """Every operation (launch, stop, sync, switch, bench, ...): who, where, when, outcome."""
    start = parse_since(since, time.time())
    with contextlib.closing(HistoryStore.open()) as store:
        _print(store.ops(start), OP_COLUMNS, fmt)


def _phases(row: BootRow) -> str:
    """The head's phases up to ready (every node's when none reached ready), e.g. `loading
    weights 12s`: they add up to the boot. Its `ready` span is left out: it runs on through the
    watch after ready (the JSON has it), so the phases summed to more than the boot."""
    spans = (
        [p for p in row.phases if p.node == row.head and p.phase != "ready"]
        if row.head
        else list(row.phases)
    )
    return ", ".join(
        f"{p.phase} {p.seconds:.0f}s" if row.head else f"{p.node}: {p.phase} {p.seconds:.0f}s"
        for p in spans
    )


BOOT_COLUMNS: list[Column] = [
    ("started_at", lambda r: r.started),
    ("lane", lambda r: r.lane),
    ("cluster", lambda r: r.cluster),
    ("head", lambda r: r.head),
    ("outcome", lambda r: r.outcome),
    ("seconds", lambda r: None if r.seconds is None else round(r.seconds, 1)),
    ("phases", _phases),
]


@history.command("boots")
@click.option("--lane", "-l", default=None, help="Only this lane's boots.")
@_since_option("30d")
@_format_option
def boots_cmd(lane: str | None, since: str, fmt: str) -> None:
    """Every boot: seconds to ready and the time each phase took on the head."""
    start = parse_since(since, time.time())
    with contextlib.closing(HistoryStore.open()) as store:
        _print(store.boots(start, lane), BOOT_COLUMNS, fmt, _boot_phases)


def _boot_phases(row: BootRow) -> dict[str, object]:
    return {
        "phases": [
            {"node": p.node, "phase": p.phase, "seconds": round(p.seconds, 3)} for p in row.phases
        ]
    }


def _known(store: HistoryStore, kind: str, name: str) -> None:
    """Refuse a lane or node the store has no figures of, naming the nearest one it has."""
    known = store.names(kind)
    if name in known:
        return
    close = difflib.get_close_matches(name, known, n=1)
    hint = (
        f" (did you mean {close[0]!r}?)"
        if close
        else f" (it has: {', '.join(known)})"
        if known
        else f" (it has no {kind} figures yet)"
    )
    raise InputError(f"no history of {kind} {name!r}{hint}")


LANE_COLUMNS: list[Column] = [
    ("at", lambda r: r.at),
    ("cluster", lambda r: r.cluster),
    ("gen_tps", lambda r: r.gen_tps),
    ("prompt_tps", lambda r: r.prompt_tps),
    ("kv_pct", lambda r: None if r.kv_usage is None else 100 * r.kv_usage),
    ("kv_max_pct", lambda r: None if r.kv_usage_max is None else 100 * r.kv_usage_max),
    ("running", lambda r: r.running),
    ("waiting", lambda r: r.waiting),
    ("waiting_max", lambda r: r.waiting_max),
    ("scrapes", lambda r: r.n),
]


@history.command("lane")
@click.argument("lane")
@click.option("--cluster", "-c", default=None, help="Only on this cluster (or give LANE@CLUSTER).")
@_since_option("1h")
@_format_option
def lane_cmd(lane: str, cluster: str | None, since: str, fmt: str) -> None:
    """A lane's engine figures, one row per 10 s: tok/s, KV-cache use, running and waiting."""
    if cluster is None and "@" in lane:
        lane, _, cluster = lane.rpartition("@")
    start = parse_since(since, time.time())
    with contextlib.closing(HistoryStore.open()) as store:
        _known(store, "lane", lane)
        if cluster is not None:
            _known(store, "cluster", cluster)
        _print(store.lane_samples(lane, start, cluster), LANE_COLUMNS, fmt)


NODE_COLUMNS: list[Column] = [
    ("at", lambda r: r.at),
    ("gpu_pct", lambda r: r.gpu_util),
    ("temp_c", lambda r: r.temp_c),
    ("temp_max_c", lambda r: r.temp_max_c),
    ("power_w", lambda r: r.power_w),
    ("mem_used_gib", lambda r: None if r.mem_used_mib is None else r.mem_used_mib / 1024),
    ("mem_total_gib", lambda r: None if r.mem_total_mib is None else r.mem_total_mib / 1024),
    ("probes", lambda r: r.n),
]


@history.command("node")
@click.argument("node")
@_since_option("1h")
@_format_option
def node_cmd(node: str, since: str, fmt: str) -> None:
    """A node's GPU and memory figures, one row per 30 s."""
    start = parse_since(since, time.time())
    with contextlib.closing(HistoryStore.open()) as store:
        _known(store, "node", node)
        _print(store.node_samples(node, start), NODE_COLUMNS, fmt)


BENCH_COLUMNS: list[Column] = [
    ("created_at", lambda r: r.created),
    ("lane", lambda r: r.lane),
    ("cluster", lambda r: r.cluster),
    ("label", lambda r: r.label),
    ("mode", lambda r: r.mode),
    ("driver", lambda r: r.driver),
    ("points", lambda r: r.points),
    ("flagged", lambda r: r.flagged),
    ("depth", lambda r: r.depth),
    ("tg_c1", lambda r: r.tg_c1),
    ("pp_c1", lambda r: r.pp_c1),
    ("tg_c2", lambda r: r.tg_c2),
    ("deep", lambda r: r.deep),
    ("tg_c1_deep", lambda r: r.tg_c1_deep),
    ("partial", lambda r: r.partial),
    ("path", lambda r: r.path),
]


@history.command("benches")
@click.option("--lane", "-l", default=None, help="Only this lane's reports.")
@_since_option("30d")
@_format_option
def benches_cmd(lane: str | None, since: str, fmt: str) -> None:
    """Every bench report written: where, and its headline tok/s (shallowest depth at c1 and
    c2, deepest at c1)."""
    start = parse_since(since, time.time())
    with contextlib.closing(HistoryStore.open()) as store:
        _print(store.benches(start, lane), BENCH_COLUMNS, fmt)


COMMANDS = [history]
