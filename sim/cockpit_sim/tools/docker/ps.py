"""`docker ps` (`container ls`): the rows its `--format` templates see, and its `--filter`s."""

from __future__ import annotations

import re
import shlex
from datetime import UTC, datetime
from typing import Any

from cockpit_sim.tools import dockerfmt
from cockpit_sim.tools.docker.containers import container_state
from cockpit_sim.tools.docker.options import opt, opts, split_options
from cockpit_sim.tools.docker.output import DockerError, out
from cockpit_sim.tools.nodestate import NodeState, Record, find_image, parse_ref


def status_text(current: Record, now: datetime) -> str:
    if current.get("Running"):
        return "Up " + dockerfmt.human_duration(dockerfmt.since_now(current["StartedAt"], now))
    if current.get("Status") == "created":
        return "Created"
    ago = dockerfmt.human_duration(dockerfmt.since_now(current["FinishedAt"], now))
    return f"Exited ({current.get('ExitCode', 0)}) {ago} ago"


def ps_image(record: Record, images: list[Record], no_trunc: bool) -> str:
    """The IMAGE column: the reference the container was made from (the daemon's id instead
    once that reference names another image or none), shortened as the CLI shortens it unless
    --no-trunc: an id to 12 digits, a digest reference to its repository (its tag kept)."""
    ref = record["Config"]["Image"]
    image = find_image(images, ref)
    if image is None or image["Id"] != record["Image"]:
        ref = record["Image"]
    if no_trunc:
        return ref
    bare = ref.removeprefix("sha256:")
    if bare.startswith(record["Image"].removeprefix("sha256:")[:12]):
        return bare[:12]
    repo, tag, _ = parse_ref(ref)
    return f"{repo}:{tag}" if tag else repo


def ps_mounts(record: Record, no_trunc: bool) -> str:
    """Volume names and bind sources, each cut to 15 characters unless --no-trunc."""
    names = [m.get("Name") or m["Source"] for m in record["Mounts"]]
    if not no_trunc:
        names = [n if len(n) <= 15 else n[:14] + "…" for n in names]
    return ",".join(names)


def ps_view(record: Record, now: datetime, no_trunc: bool, images: list[Record]) -> dict[str, Any]:
    """The object `docker ps --format` templates see (all values are strings, as there); the
    labels stay apart, for `{{.Label "k"}}` (`cmd_ps` hands them to the template)."""
    current = container_state(record)
    command = shlex.join([record["Path"], *record["Args"]])
    if not no_trunc and len(command) > 20:
        command = command[:19] + "…"
    labels = record["Config"]["Labels"] or {}
    image = next((i for i in images if i["Id"] == record["Image"]), None)
    virtual = dockerfmt.human_size(image["Size"]) if image else "0B"
    network = record["HostConfig"]["NetworkMode"]
    return {
        "Command": f'"{command}"',
        "CreatedAt": dockerfmt.docker_time(record["Created"]),
        "ID": record["Id"] if no_trunc else record["Id"][:12],
        "Image": ps_image(record, images, no_trunc),
        "Labels": ",".join(f"{k}={v}" for k, v in sorted(labels.items())),
        "LocalVolumes": str(sum(1 for m in record["Mounts"] if m["Type"] == "volume")),
        "Mounts": ps_mounts(record, no_trunc),
        "Names": record["Name"],
        "Networks": "bridge" if network == "default" else network,
        "Ports": "",
        "RunningFor": dockerfmt.human_duration(dockerfmt.since_now(record["Created"], now))
        + " ago",
        "Size": f"0B (virtual {virtual})",
        "State": current["Status"],
        "Status": status_text(current, now),
    }


PS_FILTERS = frozenset(
    [
        "ancestor",
        "before",
        "expose",
        "exited",
        "health",
        "id",
        "isolation",
        "is-task",
        "label",
        "name",
        "network",
        "publish",
        "since",
        "status",
        "volume",
    ]
)
STATUSES = frozenset(["created", "restarting", "running", "removing", "paused", "exited", "dead"])


def check_filters(filters: list[str]) -> None:
    """Refuse what the daemon refuses: unknown filter keys, unknown states."""
    for item in filters:
        key, _, value = item.partition("=")
        if key not in PS_FILTERS or (key == "status" and value not in STATUSES):
            raise DockerError(
                f"Error response from daemon: Invalid filter '{item if key == 'status' else key}'"
            )


def _matches(key: str, value: str, view: dict[str, Any], record: Record) -> bool:
    if key == "name":  # a regular expression, matched with and without the leading slash
        return any(re.search(value, n) for n in (record["Name"], "/" + record["Name"]))
    if key == "id":
        return bool(record["Id"].startswith(value))
    if key == "status":
        return bool(view["State"] == value)
    if key == "ancestor":
        return value in (record["Config"]["Image"], record["Image"])
    return True


def match_filters(view: dict[str, Any], record: Record, filters: list[str]) -> bool:
    for item in filters:
        key, _, value = item.partition("=")
        if key == "label":
            lkey, eq, lvalue = value.partition("=")
            labels = record["Config"]["Labels"] or {}
            if lkey not in labels or (eq and labels[lkey] != lvalue):
                return False
        elif not _matches(key, value, view, record):
            return False
    return True


def cmd_ps(state: NodeState, args: list[str]) -> int:
    options, _ = split_options(args, {"--format", "--filter", "-f", "-n", "--last"}, False)
    show_all = "-a" in options or "--all" in options
    no_trunc = "--no-trunc" in options
    filters = opts(options, "--filter", "-f")
    check_filters(filters)
    now = datetime.now(UTC)
    images = state.images()
    rows, labels = [], []
    for record in reversed(state.containers()):
        view = ps_view(record, now, no_trunc, images)
        if not show_all and view["State"] != "running":
            continue
        if match_filters(view, record, filters):
            rows.append(view)
            labels.append(record["Config"]["Labels"] or {})
    if "-q" in options or "--quiet" in options:
        out("".join(v["ID"] + "\n" for v in rows))
        return 0
    template = opt(options, "--format") or (
        "table {{.ID}}\t{{.Image}}\t{{.Command}}\t{{.RunningFor}}\t{{.Status}}\t{{.Ports}}"
        "\t{{.Names}}"
    )
    out(dockerfmt.render_rows(template, rows, dockerfmt.HEADERS, labels))
    return 0
