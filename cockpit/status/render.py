"""Status → rich tables (for the terminal) and → plain JSON (for scripts). Pure functions.

Both are an output edge: every text a node or the inventory gave (container names and states,
error lines, reasons) goes through `cockpit.redact.shown` here, in the table and in the JSON.
"""

from __future__ import annotations

import dataclasses
from enum import Enum
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from cockpit.redact import shown
from cockpit.status.model import ContainerView, FleetStatus, Health, ImageRow, NodeRow, Presence

_HEALTH_STYLE = {
    Health.OK: "green",
    Health.CONNECTING: "cyan",
    Health.STALE: "yellow",
    Health.DOWN: "bold red",
}
_PRESENCE = {
    Presence.DIGEST: ("✓", "green"),
    Presence.ID_ONLY: ("id", "yellow"),
    Presence.WRONG_ID: ("✗ id", "bold red"),
    Presence.ABSENT: ("—", "red"),
    Presence.UNKNOWN: ("?", "dim"),
}
IMAGES_LEGEND = (
    "✓ present with its digest · id: loaded without digest (run by digest fails) · "
    "✗ id: the digest names another image than the pinned id · — absent · ? not known yet"
)
UNIFIED_NOTE = "* unified memory: from /proc/meminfo, as nvidia-smi reads [N/A]"
MIB_PER_GIB = 1024.0
_KIND_NAMES = {"gpu": "GPU", "mem": "memory", "ps": "containers", "img": "images"}


def _num(value: float | None, unit: str = "", digits: int = 0) -> str:
    return "—" if value is None else f"{value:.{digits}f}{unit}"


def _state(row: NodeRow) -> Text:
    label = row.health.value.upper() if row.health is not Health.OK else "ok"
    if row.health is Health.STALE and row.data_age_s is not None:
        label = f"STALE {row.data_age_s:.0f}s"
    text = Text(label, style=_HEALTH_STYLE[row.health])
    if row.failed:
        text.append(" !", style="yellow")
    return text


def problems(status: FleetStatus) -> Text:
    """One line per node that is not OK or whose tools fail: the reasons, in full."""
    text = Text()
    for row in status.rows:
        reasons = [row.detail] if row.health is not Health.OK and row.detail else []
        reasons += [f"{failure} on the node" for failure in row.failed]
        for reason in reasons:
            text.append(f"{shown(row.node)}: ", style="bold")
            text.append(f"{shown(reason)}\n", style=_HEALTH_STYLE[row.health])
    for node, kinds in status.unknown.items():
        text.append(f"{shown(node)}: ", style="bold")
        text.append(f"still unknown: {', '.join(_KIND_NAMES.get(k, k) for k in kinds)}\n",
                    style="yellow")  # fmt: skip
    for problem in status.problems:
        text.append(f"{shown(problem.node)}: ", style="bold")
        text.append(f"{shown(problem.message)}\n", style="red")
        text.append(f"  fix: {shown(problem.fix)}\n")
    text.rstrip()
    return text


def locks(status: FleetStatus) -> Text:
    """One line per node held by an operation (any cockpit's): whose, for what, how fresh."""
    text = Text()
    for row in status.rows:
        if row.lock is not None:
            text.append(f"{shown(row.node)}: ", style="bold")
            text.append(f"{shown(row.lock.line())}\n", style="yellow" if row.lock.stale else "")
    text.rstrip()
    return text


def in_flight(status: FleetStatus) -> Text:
    """One line per operation in flight (any cockpit's): what, whose, how far, where."""
    text = Text()
    for op in status.operations:
        text.append("operation: ", style="bold")
        text.append(f"{shown(op.line())}\n", style="yellow" if op.stale else "")
    text.rstrip()
    return text


def _memory(row: NodeRow) -> str:
    mem = row.memory
    if mem is None:
        return "—"
    cell = f"{mem.used_mib / MIB_PER_GIB:.1f}/{mem.total_mib / MIB_PER_GIB:.1f} GiB"
    if mem.source == "meminfo":
        cell += "*"
    if mem.gpu_apps_mib is not None:
        cell += f"\napps {mem.gpu_apps_mib / MIB_PER_GIB:.1f} GiB"
    return cell


def _container(c: ContainerView) -> str:
    """`name [lane]`, then ORPHANED, or how a lane container that ended is left."""
    cell = f"{c.name} [{c.lane}]" if c.lane else c.name
    if c.orphaned:
        cell += " ORPHANED"
    if c.state != "running":
        cell += f" {c.state.upper()}" + (f" ({c.exit_code})" if c.exit_code is not None else "")
    return shown(cell)


def _containers(row: NodeRow) -> str:
    if row.containers is None:
        return "?"
    if not row.containers:
        return "none"
    return "\n".join(_container(c) for c in row.containers)


def nodes_table(status: FleetStatus) -> Table:
    unified = any(r.memory and r.memory.source == "meminfo" for r in status.rows)
    table = Table(
        title="nodes",
        title_justify="left",
        caption=UNIFIED_NOTE if unified else None,
        caption_justify="left",
    )
    for header, justify in [
        ("node", "left"),
        ("state", "left"),
        ("gpu", "right"),
        ("temp", "right"),
        ("power", "right"),
        ("sm/mem MHz", "right"),
        ("memory", "right"),
        ("containers [lane]", "left"),
    ]:
        wraps = header in ("state", "containers [lane]")
        table.add_column(header, justify=justify, no_wrap=not wraps)  # type: ignore[arg-type]
    for row in status.rows:
        dim = "dim" if row.health in (Health.STALE, Health.DOWN) else ""
        table.add_row(
            Text(shown(row.node)),
            _state(row),
            _num(row.util_pct, " %"),
            _num(row.temp_c, " °C"),
            _num(row.power_w, " W", 1),
            f"{_num(row.sm_mhz)}/{_num(row.mem_mhz)}",
            Text(_memory(row)),
            Text(_containers(row)),  # names and labels are data, never markup
            style=dim,
        )
    return table


def _image_label(image_row: ImageRow) -> str:
    repo, _, digest = image_row.image.ref.partition("@")
    return shown(f"{repo.rsplit('/', 1)[-1]}@{digest.removeprefix('sha256:')[:8]}")


def images_table(status: FleetStatus) -> Table:
    table = Table(
        title="recipe images", title_justify="left", caption=IMAGES_LEGEND, caption_justify="left"
    )
    table.add_column("image / recipes", no_wrap=True, overflow="ellipsis", max_width=20)
    nodes = [row.node for row in status.rows]
    for node in nodes:
        table.add_column(shown(node), justify="center", no_wrap=True, min_width=len(node))
    for image_row in status.images:
        cells = [Text(*_PRESENCE[image_row.presence[node]]) for node in nodes]
        label = Text(_image_label(image_row))
        label.append("".join(f"\n  {shown(r)}" for r in image_row.image.recipes), style="dim")
        table.add_row(label, *cells)
    return table


def status_renderable(status: FleetStatus) -> Group:
    parts: list[Table | Text] = [nodes_table(status)]
    if notes := problems(status):
        parts.append(notes)
    if held := locks(status):
        parts.append(held)
    if running := in_flight(status):
        parts.append(running)
    if status.images:
        parts.append(images_table(status))
    return Group(*parts)


def _plain(value: Any) -> Any:
    """JSON-ready, every text (keys too: node names) as `shown` prints it."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, str):
        return shown(value)
    if isinstance(value, dict):
        return {shown(str(k)): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def status_json(status: FleetStatus) -> dict[str, Any]:
    """JSON-ready dict: `nodes` (one per row) and `images` (presence per node)."""
    return {
        "at": status.at,
        "nodes": [_plain(dataclasses.asdict(row)) for row in status.rows],
        "images": [
            {**_plain(dataclasses.asdict(r.image)), "presence": _plain(dict(r.presence))}
            for r in status.images
        ],
        "problems": [_plain(dataclasses.asdict(p)) for p in status.problems],
        "operations": [
            {**_plain(dataclasses.asdict(op)), "stale": op.stale} for op in status.operations
        ],
        "complete": status.complete,
        "unknown": _plain({node: list(kinds) for node, kinds in status.unknown.items()}),
    }
