"""Docker CLI output → typed records: `docker ps --format '{{json .}}'`, `docker inspect` JSON.

The digest helpers exist because of the seed's sync lesson: `docker save | docker load` keeps the
image id but drops RepoDigests, so an image "present by id" is not "present by digest" and
`docker run repo@sha256:...` fails on that node until the digest is re-attached.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

LANE_LABEL = "cockpit.lane"
RANK_LABEL = "cockpit.rank"
CLUSTER_LABEL = "cockpit.cluster"


def follow_logs_command(
    container: str,
    *,
    tail: int | None = None,
    timestamps: bool = False,
    follow: bool = True,
    since: str | None = None,
) -> str:
    """`docker logs [-f]` of a container with both of its streams on stdout: docker replays what
    the container wrote to stderr on its own stderr, and that is where a real engine's
    tracebacks, warnings and uvicorn's errors go. `since`: docker's own `--since` (a duration
    such as `10m`, or a time), relative to the node's clock."""
    argv = ["docker", "logs"]
    if follow:
        argv.append("-f")
    if timestamps:
        argv.append("--timestamps")
    if tail is not None:
        argv += ["--tail", str(tail)]
    if since is not None:
        argv += ["--since", since]
    return shlex.join([*argv, "--", container]) + " 2>&1"


def split_time(line: str) -> tuple[str, str]:
    """A `docker logs --timestamps` line → (its RFC 3339 time, the line the container wrote);
    ("", line) for a line without one. Tests positions, not a regex: the TUI's store splits every
    line of a flood."""
    if len(line) > 20 and line[4] == "-" and line[10] == "T" and line[:4].isdigit():
        stamp, _, rest = line.partition(" ")
        return stamp, rest
    return "", line


@dataclass(frozen=True)
class ContainerRow:
    """One line of `docker ps --format '{{json .}}'`."""

    id: str
    names: str
    image: str
    state: str | None
    status: str | None
    labels: Mapping[str, str] = field(default_factory=dict)
    created_at: str | None = None
    ports: str | None = None
    command: str | None = None


@dataclass(frozen=True)
class ImageInfo:
    """An image from `docker image inspect`."""

    id: str
    repo_tags: tuple[str, ...] = ()
    repo_digests: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    size: int | None = None


@dataclass(frozen=True)
class ContainerState:
    status: str | None
    running: bool
    exit_code: int | None
    error: str | None
    oom_killed: bool
    started_at: str | None
    finished_at: str | None


@dataclass(frozen=True)
class ContainerInfo:
    """A container from `docker inspect`; `image_id` is the resolved id, `image` the reference."""

    id: str
    name: str
    image_id: str | None
    image: str | None
    labels: Mapping[str, str]
    state: ContainerState | None


@dataclass(frozen=True)
class LaneLabel:
    lane: str
    rank: int | None
    cluster: str | None


def _labels_from_ps(value: Any) -> dict[str, str]:
    """`docker ps` JSON gives labels as one `k=v,k2=v2` string, in no fixed order (a map in
    some other clients). A value may hold `=` and commas: a comma-separated part starts a new
    label only when it reads `key=…` with no space in the key, else it continues the value
    before. Docker's string cannot tell `a=x,b=y` from a value `x,b=y`: such a value reads as
    two labels. The cockpit's own labels (names, ranks, hashes) never hold a comma, so they
    always read exactly."""
    if isinstance(value, Mapping):
        return {str(k): str(v) for k, v in value.items()}
    if not isinstance(value, str) or not value:
        return {}
    labels: dict[str, str] = {}
    last: str | None = None
    for part in value.split(","):
        key, sep, val = part.partition("=")
        if sep and key and " " not in key:
            labels[key] = val
            last = key
        elif last is not None:  # a value that itself contained a comma
            labels[last] += "," + part
    return labels


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def parse_ps(text: str) -> list[ContainerRow]:
    """Parse `docker ps [-a] --format '{{json .}}'` output, one JSON object per line."""
    rows: list[ContainerRow] = []
    for line in text.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("ID"), str):
            continue
        rows.append(
            ContainerRow(
                id=obj["ID"],
                names=_str(obj.get("Names")) or "",
                image=_str(obj.get("Image")) or "",
                state=_str(obj.get("State")),
                status=_str(obj.get("Status")),
                labels=_labels_from_ps(obj.get("Labels")),
                created_at=_str(obj.get("CreatedAt")),
                ports=_str(obj.get("Ports")),
                command=_str(obj.get("Command")),
            )
        )
    return rows


def _inspect_objects(text: str) -> list[dict[str, Any]]:
    try:
        data = json.loads(text)
    except ValueError:
        return []
    items = data if isinstance(data, list) else [data]
    return [item for item in items if isinstance(item, dict) and isinstance(item.get("Id"), str)]


def _labels(config: Any) -> dict[str, str]:
    labels = config.get("Labels") if isinstance(config, dict) else None
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def parse_image_inspect(text: str) -> list[ImageInfo]:
    """Parse `docker image inspect` JSON; an error message instead of JSON gives []."""
    return [
        ImageInfo(
            id=obj["Id"],
            repo_tags=_strings(obj.get("RepoTags")),
            repo_digests=_strings(obj.get("RepoDigests")),
            labels=_labels(obj.get("Config")),
            size=obj["Size"] if isinstance(obj.get("Size"), int) else None,
        )
        for obj in _inspect_objects(text)
    ]


def parse_container_inspect(text: str) -> list[ContainerInfo]:
    """Parse `docker inspect <container>` JSON; an error message instead of JSON gives []."""
    out: list[ContainerInfo] = []
    for obj in _inspect_objects(text):
        raw_state = obj.get("State")
        state = None
        if isinstance(raw_state, dict):
            code = raw_state.get("ExitCode")
            state = ContainerState(
                status=_str(raw_state.get("Status")),
                running=raw_state.get("Running") is True,
                exit_code=code if isinstance(code, int) else None,
                error=_str(raw_state.get("Error")) or None,
                oom_killed=raw_state.get("OOMKilled") is True,
                started_at=_str(raw_state.get("StartedAt")),
                finished_at=_str(raw_state.get("FinishedAt")),
            )
        config = obj.get("Config")
        out.append(
            ContainerInfo(
                id=obj["Id"],
                name=(_str(obj.get("Name")) or "").lstrip("/"),
                image_id=_str(obj.get("Image")),
                image=_str(config.get("Image")) if isinstance(config, dict) else None,
                labels=_labels(config),
                state=state,
            )
        )
    return out


def _split_digest_ref(ref: str) -> tuple[str | None, str]:
    """`repo@sha256:abc` → (`repo`, `sha256:abc`); `sha256:abc` or `abc` → (None, `sha256:abc`)."""
    repo, sep, digest = ref.strip().rpartition("@")
    digest = digest.removesuffix("…").removesuffix("...")
    if not digest.startswith("sha256:"):
        digest = "sha256:" + digest
    return (repo if sep and repo else None), digest.lower()


_MIN_DIGEST_PREFIX = 8  # hex characters; the seed abbreviates digests to 8 ("c977a2d2…")


def image_with_digest(images: Iterable[ImageInfo], ref: str) -> ImageInfo | None:
    """The image whose RepoDigests contain `ref` (`repo@sha256:…`, `sha256:…` or a hex prefix).

    A digest prefix of at least 8 hex characters matches; a repository in `ref` must match too
    (ignoring a `docker.io/` default). Only RepoDigests count, not the image id: see module doc.
    """
    repo, digest = _split_digest_ref(ref)
    if len(digest) - len("sha256:") < _MIN_DIGEST_PREFIX:
        return None
    for image in images:
        for entry in image.repo_digests:
            entry_repo, entry_digest = _split_digest_ref(entry)
            if not entry_digest.startswith(digest):
                continue
            if repo is None or _same_repo(repo, entry_repo):
                return image
    return None


def _same_repo(a: str, b: str | None) -> bool:
    def norm(name: str) -> str:
        name = name.removeprefix("docker.io/").removeprefix("library/")
        head, sep, tail = name.rpartition(":")
        return head if sep and "/" not in tail else name  # drop a tag, keep a registry port

    return b is not None and norm(a) == norm(b)


def image_with_id(images: Iterable[ImageInfo], image_id: str) -> ImageInfo | None:
    """The image whose id starts with `image_id` (with or without `sha256:`, ≥ 8 hex chars)."""
    _, wanted = _split_digest_ref(image_id.rpartition("@")[2])
    if len(wanted) - len("sha256:") < _MIN_DIGEST_PREFIX:
        return None
    return next((i for i in images if _split_digest_ref(i.id)[1].startswith(wanted)), None)


_NOT_THE_REASON = re.compile(
    r"^(See 'docker .*--help'\.?|Run 'docker .*--help' for more information|"
    r"Unable to find image '.*' locally|.*: Pulling from .*|Digest: .*|Status: .*|"
    r'time=".*" level=\w+ msg="error waiting for container: .*")$'
)


def docker_error(stderr: str, fallback: str) -> str:
    """The reason in a failed docker command's stderr, in the daemon's words.

    `docker run` ends its error with a help hint (`See 'docker run --help'.`), may start with an
    implicit pull's progress and, in the foreground, may add the client's own log line `error
    waiting for container: context canceled`: the reason is the last line that is none of them,
    without the CLI's `docker: Error response from daemon:` prefix and final period."""
    for line in reversed(stderr.strip().splitlines()):
        line = line.strip()
        if line and not _NOT_THE_REASON.match(line):
            line = line.removeprefix("docker: ").removeprefix("Error response from daemon: ")
            return line.removesuffix(".") or fallback
    return fallback


def lane_of(labels: Mapping[str, str]) -> LaneLabel | None:
    """Which lane a container belongs to, from its `cockpit.*` labels; None if not the cockpit's."""
    lane = labels.get(LANE_LABEL)
    if not lane:
        return None
    rank_text = labels.get(RANK_LABEL, "")
    return LaneLabel(
        lane=lane,
        rank=int(rank_text) if rank_text.isdigit() else None,
        cluster=labels.get(CLUSTER_LABEL) or None,
    )


_EXIT_RE = re.compile(r"^Exited \((-?\d+)\)")


def exit_code(status: str | None) -> int | None:
    """The exit code in `docker ps`'s status text (`Exited (137) 5 seconds ago`)."""
    match = _EXIT_RE.match(status or "")
    return int(match.group(1)) if match else None
