"""A simulated node's on-disk state: images, containers, facts; shared by the tools and the fleet.

Layout of one node directory (`<fleet dir>/nodes/dgxK`):
  images.json       image records (a list, see `new_image`)
  containers.json   container records (a list, see docker/run.py)
  containers/ID/    per container: json log, exit status, supervisor pid
  node.json         facts and faults read by the simulated engine: {"hcas": [...], "faults": {...}}
  gpu_load.json     the GPU load the engine last published (read by nvidia-smi)
  hf-cache/         the model cache (hub/models--ORG--NAME/snapshots/REV/...)
  home/             $HOME of every session on the node
  state.lock        flock guarding images.json and containers.json
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cockpit.pids import pid_exists

# Simulated image bytes per virtual GiB: `docker save` streams size_gib MiB instead of GiB, so a
# 29.5 GiB image moves as 29.5 MiB. Records keep the real ("virtual") size for display.
SIM_BYTES_PER_GIB = 1 << 20
GIB = 1 << 30
HEX64 = re.compile(r"^[0-9a-f]{64}$")

Record = dict[str, Any]
REGISTRY_DOWN = "registry.down"
"""In the fleet folder: present while the simulated registry is down (`cockpit sim registry
down`); every node's docker then fails to reach it."""


def derive_hex(prefix: str, salt: str) -> str:
    """A full 64-hex value that starts with `prefix`, the rest derived from sha256(salt:prefix).

    The seed knows digests and image ids by prefix only; the simulator needs full values, and the
    same prefix must give the same full value on every run and node.
    """
    import hashlib

    prefix = prefix.removeprefix("sha256:").lower()
    if not re.fullmatch(r"[0-9a-f]{0,64}", prefix):
        raise ValueError(f"not a hex prefix: {prefix!r}")
    filler = hashlib.sha256(f"{salt}:{prefix}".encode()).hexdigest()
    return prefix + filler[len(prefix) :]


def sim_bytes(size_bytes: int) -> int:
    """Bytes `docker save` streams for an image of `size_bytes` (scaled, whole 512-byte blocks)."""
    scaled = size_bytes * SIM_BYTES_PER_GIB // GIB
    return max(4096, scaled // 512 * 512)


def new_image(
    *,
    repo: str,
    image_id: str,
    size_bytes: int,
    digest: str | None = None,
    tags: list[str] | None = None,
    labels: dict[str, str] | None = None,
    entrypoint: list[str] | None = None,
    engine: bool = False,
    created: str = "2026-09-28T12:00:00Z",
) -> Record:
    """An image record as `docker image inspect` shows it, plus the simulator's own keys.

    `engine` marks an image whose entrypoint is the vLLM launcher: its containers run the
    simulated engine instead of their command line.
    """
    return {
        "Id": "sha256:" + image_id.removeprefix("sha256:"),
        "RepoTags": list(tags or []),
        "RepoDigests": [f"{repo}@{digest}"] if digest else [],
        "Created": created,
        "Size": size_bytes,
        "Architecture": "arm64",
        "Os": "linux",
        "Config": {
            "Labels": dict(labels or {}),
            "Entrypoint": list(entrypoint or []),
            "Cmd": None,
            "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
        },
        "SimRepo": repo,
        "SimEngine": engine,
        "SimBytes": sim_bytes(size_bytes),
    }


class NodeState:
    """Locked access to one node's JSON state files."""

    def __init__(self, node_dir: Path) -> None:
        self.dir = node_dir

    @property
    def containers_dir(self) -> Path:
        return self.dir / "containers"

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the node's state lock (docker invocations run concurrently)."""
        with open(self.dir / "state.lock", "a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def read(self, name: str, default: Any) -> Any:
        try:
            return json.loads((self.dir / name).read_text())
        except FileNotFoundError:
            return default

    def write(self, name: str, value: Any) -> None:
        write_json_atomic(self.dir / name, value)

    def images(self) -> list[Record]:
        return self.read("images.json", [])

    def containers(self) -> list[Record]:
        return self.read("containers.json", [])

    def facts(self) -> Record:
        return self.read("node.json", {"hcas": [], "faults": {}})


def write_json_atomic(path: Path, value: Any) -> None:
    """Replace `path` with the JSON of `value` in one rename (readers never see half a file)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w") as handle:
        json.dump(value, handle, indent=1)
    os.replace(tmp, path)


def parse_ref(ref: str) -> tuple[str, str | None, str | None]:
    """Split an image reference into (repository, tag, digest); docker.io defaults not applied."""
    digest = None
    if "@" in ref:
        ref, digest = ref.split("@", 1)
    tag = None
    last = ref.rsplit("/", 1)[-1]
    if ":" in last:
        ref, tag = ref.rsplit(":", 1)
    return ref, tag, digest


def digest_matches(repo_digest: str, repo: str, digest: str) -> bool:
    """`repo@sha256:PREFIX` names `repo@sha256:FULL`.

    Leniency of the simulator: the seed (and so the recipes) know digests by prefix only; real
    docker would want all 64 hex digits. At least 8 must be given."""
    have_repo, _, have = repo_digest.partition("@")
    return have_repo == repo and len(digest) >= len("sha256:") + 8 and have.startswith(digest)


def find_image(images: list[Record], ref: str) -> Record | None:
    """The image a reference names, as the docker daemon resolves it locally.

    By digest only through RepoDigests (an image loaded from a tar has none, so `repo@sha256:...`
    does not resolve: the seed's failure), by `repo:tag` through RepoTags (`:latest` implied), or by
    an id or id prefix.
    """
    repo, tag, digest = parse_ref(ref)
    for image in images:
        if digest is not None:
            if any(digest_matches(d, repo, digest) for d in image["RepoDigests"]):
                return image
        elif f"{repo}:{tag or 'latest'}" in image["RepoTags"]:
            return image
    bare = ref.removeprefix("sha256:")
    if digest is None and re.fullmatch(r"[0-9a-f]{4,64}", bare):
        for image in images:
            if image["Id"].removeprefix("sha256:").startswith(bare):
                return image
    return None


def pid_alive(pid: int) -> bool:
    """True while a process with this id exists and is not a zombie."""
    if not pid_exists(pid):
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"
