"""Pure formatting as the Docker CLI does it: human sizes and durations, tables, Go templates.

Rules follow docker/go-units (HumanDuration, HumanSizeWithPrecision) and the CLI's tabwriter
(min width 10, padding 3), so parsers written against real output read ours unchanged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

HEADERS = {
    "ID": "CONTAINER ID",
    "Image": "IMAGE",
    "Command": "COMMAND",
    "CreatedAt": "CREATED AT",
    "RunningFor": "CREATED",
    "Status": "STATUS",
    "State": "STATE",
    "Ports": "PORTS",
    "Names": "NAMES",
    "Labels": "LABELS",
    "Mounts": "MOUNTS",
    "Networks": "NETWORKS",
    "Size": "SIZE",
    "Repository": "REPOSITORY",
    "Tag": "TAG",
    "Digest": "DIGEST",
    "CreatedSince": "CREATED",
}
IMAGE_HEADERS = {**HEADERS, "ID": "IMAGE ID"}


def human_duration(seconds: float) -> str:
    """go-units HumanDuration."""
    s = int(seconds)
    if s < 1:
        return "Less than a second"
    if s == 1:
        return "1 second"
    if s < 60:
        return f"{s} seconds"
    minutes = s // 60
    if minutes == 1:
        return "About a minute"
    if minutes < 60:
        return f"{minutes} minutes"
    hours = int(seconds / 3600 + 0.5)
    if hours == 1:
        return "About an hour"
    if hours < 48:
        return f"{hours} hours"
    if hours < 24 * 7 * 2:
        return f"{hours // 24} days"
    if hours < 24 * 30 * 2:
        return f"{hours // 24 // 7} weeks"
    if hours < 24 * 365 * 2:
        return f"{hours // 24 // 30} months"
    return f"{int(hours / 24 / 365)} years"


def human_size(size: float, precision: int = 3) -> str:
    """go-units HumanSizeWithPrecision: decimal units, `precision` significant digits (the CLI
    prints sizes with 3, `VirtualSize` with go-units' HumanSize, i.e. 4)."""
    units = ["B", "kB", "MB", "GB", "TB", "PB"]
    i = 0
    while size >= 1000 and i < len(units) - 1:
        size /= 1000
        i += 1
    return f"{size:.{precision}g}{units[i]}"


def go_json(value: Any) -> str:
    """The template function `json` of Docker 20.10's CLI: compact, keys in the given order,
    `<`, `>` and `&` escaped as Go's encoder escapes them (later CLIs stopped doing that)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def docker_time(text: str) -> str:
    """`2026-11-29 19:24:43 +0000 UTC`, the CreatedAt of `docker ps`."""
    return parse_time(text).strftime("%Y-%m-%d %H:%M:%S +0000 UTC")


def rfc3339_nano(moment: datetime) -> str:
    """Timestamps of `docker logs -t` (fixed nine fraction digits)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"


def since_now(text: str, now: datetime) -> float:
    return (now - parse_time(text)).total_seconds()


def tabulate(rows: Sequence[Sequence[str]]) -> str:
    """The CLI's tabwriter: each column but the last padded to max(width + 3, 10)."""
    if not rows:
        return ""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [
            cell.ljust(max(widths[i] + 3, 10)) if i < len(row) - 1 else cell
            for i, cell in enumerate(row)
        ]
        lines.append("".join(cells).rstrip() if len(row) == 1 else "".join(cells))
    return "\n".join(lines) + "\n"


_ACTION = re.compile(r"\{\{\s*(.*?)\s*\}\}")


def _lookup(value: Any, path: str) -> Any:
    if path in (".", ""):
        return value
    for part in path.lstrip(".").split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _go_text(value: Any) -> str:
    """How text/template prints a value: maps as map[k:v], lists as [a b], nil as <no value>."""
    if value is None:
        return "<no value>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go_text(v)}" for k, v in sorted(value.items())) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go_text(v) for v in value) + "]"
    return str(value)


def _evaluate(action: str, obj: dict[str, Any], labels: Mapping[str, str]) -> str:
    words = re.findall(r'"[^"]*"|\S+', action)
    if not words:
        return ""
    head, args = words[0], words[1:]
    if head == "json":
        return go_json(_lookup(obj, args[0] if args else "."))
    if head == "index" and len(args) == 2:
        container = _lookup(obj, args[0])
        key = args[1].strip('"')
        try:
            item = container[int(key)] if isinstance(container, list) else container[key]
        except (KeyError, IndexError, ValueError, TypeError):
            item = None
        return _go_text(item)
    if head == "join" and len(args) == 2:
        return args[1].strip('"').join(str(v) for v in _lookup(obj, args[0]) or [])
    if head == ".Label" and args:
        return str(labels.get(args[0].strip('"'), ""))
    return _go_text(_lookup(obj, head))


def render_template(
    template: str, obj: dict[str, Any], labels: Mapping[str, str] | None = None
) -> str:
    """A Go template subset: `{{json .}}`, `{{.A.B}}`, `{{json .A}}`, `{{index .A 0}}`,
    `{{join .A ","}}`, `{{.Label "k"}}` (a method of `docker ps` rows, answered from `labels`:
    it is no field, so `{{json .}}` does not show it); `\\t` and `\\n` escapes as the CLI
    expands them."""
    template = template.replace("\\t", "\t").replace("\\n", "\n")
    return _ACTION.sub(lambda m: _evaluate(m.group(1), obj, labels or {}), template)


def _header(action: str, headers: dict[str, str]) -> str:
    words = re.findall(r'"[^"]*"|\S+', action)
    if len(words) == 2 and words[0] == ".Label":
        return words[1].strip('"')  # the CLI titles a label column with the label's key
    return headers.get(action.lstrip("."), action.lstrip(".").upper())


def render_rows(
    template: str,
    objects: Sequence[dict[str, Any]],
    headers: dict[str, str],
    labels: Sequence[Mapping[str, str]] | None = None,
) -> str:
    """`--format`: `table ...` prints a header row and aligns columns, anything else a line each;
    `labels[i]` answers `{{.Label "k"}}` for `objects[i]`."""
    label_maps = list(labels) if labels is not None else [{}] * len(objects)
    pairs = list(zip(objects, label_maps, strict=True))
    if template.startswith("table"):
        body = template[len("table") :].strip() or "{{.ID}}"
        header = _ACTION.sub(lambda m: _header(m.group(1), headers), body.replace("\\t", "\t"))
        rows = [header.split("\t")] + [render_template(body, o, lm).split("\t") for o, lm in pairs]
        return tabulate(rows)
    return "".join(render_template(template, o, lm) + "\n" for o, lm in pairs)
