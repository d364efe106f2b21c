"""Model snapshot sync planning (pure): who holds the pinned snapshot, who needs it, which caches
are one and the same, and the shell commands that move it.

The snapshot is the HF cache layout under the node's model cache:
`hub/models--ORG--NAME/snapshots/REV/` (files, or symlinks into `../../blobs/`) and the blobs
those symlinks name. The source runs `tar -cf -` of exactly that (blobs first, the snapshot
folder, then an end marker from a temp dir); the cockpit pipes it to `tar -xf -` on the
destination, which extracts into a temp folder beside the model (same filesystem), and only when
tar succeeded AND the end marker arrived moves the blobs into place and renames the snapshot
folder over the old one. A copy cut anywhere — even exactly between two tar members, which tar
itself accepts as a whole archive — never lands at the snapshot's path.

Nodes whose caches are one (a NAS mounted everywhere, as the seed's `/srv/hf-cache`) are told
apart by a marker file in the cache holding a random id (written once, `set -C` so two nodes of
one cache keep the first), else by the cache folder's device:inode.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from cockpit.config.models import ModelFacts
from cockpit.errors import InputError
from cockpit.ops.facts import NodeFacts
from cockpit.ops.preflight import snapshot_problems

# $1 the cache root. Prints device:inode of the cache (or "-"), then the marker's id if any.
IDENTITY_SCRIPT = """cache=$1
stat -L -c '%d:%i' -- "$cache" 2>/dev/null || echo -
head -c 64 -- "$cache/.cockpit-cache-id" 2>/dev/null || true
"""

# $1 the cache root, $2 a fresh id. Writes the marker unless there is one; prints the one kept.
MARK_SCRIPT = """cache=$1 id=$2
[ -d "$cache" ] || { echo -; exit 0; }
[ -s "$cache/.cockpit-cache-id" ] || (set -C; printf '%s\\n' "$id" > "$cache/.cockpit-cache-id") \\
  2>/dev/null
head -c 64 -- "$cache/.cockpit-cache-id" 2>/dev/null || echo -
"""

# $1 the model folder, $2 the revision. `%y %s %p` of the snapshot's entries and of its blobs.
MANIFEST_SCRIPT = """cd -- "$1" || exit 1
[ -d "snapshots/$2" ] || { echo "no snapshots/$2 under $1" >&2; exit 1; }
find -P "snapshots/$2" -printf '%y %s %p\\n'
find -P "snapshots/$2" -type l -printf '%l\\n' | while IFS= read -r t; do
  b=blobs/${t##*/}; [ -f "$b" ] && printf 'f %s %s\\n' "$(stat -c %s -- "$b")" "$b"
done | sort -u
"""

# $1 the model folder, $2 the revision: the tar stream on stdout.
SEND_SCRIPT = """cd -- "$1" || exit 1
[ -d "snapshots/$2" ] || { echo "no snapshots/$2 under $1" >&2; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf -- "$tmp"' EXIT
: > "$tmp/.cockpit-end"
find -P "snapshots/$2" -type l -printf '%l\\0' | while IFS= read -r -d '' t; do
  b=blobs/${t##*/}; [ -f "$b" ] && printf '%s\\0' "$b"
done | sort -zu > "$tmp/list"
printf 'snapshots/%s\\0' "$2" >> "$tmp/list"
tar -cf - --null -T "$tmp/list" -C "$tmp" .cockpit-end
"""

# $1 the model folder, $2 the revision; the tar stream on stdin.
RECEIVE_SCRIPT = """model=$1 rev=$2
mkdir -p -- "$model" || exit 1
for old in "$model"/.cockpit-sync.*; do [ -e "$old" ] && rm -rf -- "$old"; done
tmp=$(mktemp -d -- "$model/.cockpit-sync.XXXXXX") || exit 1
trap 'rm -rf -- "$tmp"' EXIT
tar -xf - -C "$tmp" --no-same-owner || { echo "tar could not extract the stream" >&2; exit 1; }
[ -e "$tmp/.cockpit-end" ] || { echo "the stream was cut before its end" >&2; exit 1; }
[ -d "$tmp/snapshots/$rev" ] || { echo "the stream held no snapshots/$rev" >&2; exit 1; }
mkdir -p -- "$model/blobs" "$model/snapshots" || exit 1
for b in "$tmp"/blobs/*; do
  [ -e "$b" ] || [ -L "$b" ] || continue
  mv -f -- "$b" "$model/blobs/" || exit 1
done
if [ -e "$model/snapshots/$rev" ] || [ -L "$model/snapshots/$rev" ]; then
  mv -T -- "$model/snapshots/$rev" "$tmp/replaced" || exit 1
fi
mv -T -- "$tmp/snapshots/$rev" "$model/snapshots/$rev"
"""


@dataclass(frozen=True)
class CacheIdentity:
    """What tells two nodes' caches apart: the marker's id, else the folder's device:inode."""

    device_inode: str = "-"
    marker: str = ""

    @property
    def key(self) -> str | None:
        """The identity, None when the cache folder does not exist (nothing to share)."""
        if self.marker:
            return "id:" + self.marker
        return None if self.device_inode == "-" else "inode:" + self.device_inode


def parse_identity(text: str) -> CacheIdentity:
    """IDENTITY_SCRIPT's (or MARK_SCRIPT's) output → CacheIdentity."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return CacheIdentity()
    if ":" in lines[0] or lines[0] == "-":  # the identity script: device:inode first
        return CacheIdentity(lines[0], lines[1] if len(lines) > 1 else "")
    return CacheIdentity(marker=lines[0])


@dataclass(frozen=True)
class ModelSyncPlan:
    """`source` sends to `copy`; `current` already match the pins; `shared` (node, with whom)
    see another node's cache and are skipped; `unreachable` could not be asked."""

    source: str
    label: str  # repo@revision
    copy: tuple[str, ...]
    current: tuple[str, ...]
    shared: tuple[tuple[str, str], ...] = ()
    unreachable: tuple[str, ...] = ()
    reasons: tuple[tuple[str, str], ...] = ()  # (node in copy, why it needs the copy)
    total_bytes: int | None = None  # the tar stream's size (estimated), once the source told

    @property
    def verify(self) -> tuple[str, ...]:
        """The nodes whose pins are read again after the copy."""
        return self.copy + tuple(node for node, _ in self.shared)

    def describe(self) -> str:
        why = dict(self.reasons)
        if self.copy:
            size = f" ({_size(self.total_bytes)})" if self.total_bytes else ""
            targets = ", ".join(f"{n} ({why[n]})" if n in why else n for n in self.copy)
            parts = [f"copy {self.label}{size} {self.source} → cockpit → {targets}"]
            if self.current:
                parts.append(f"already matching: {', '.join(self.current)}")
        else:
            matching = ", ".join((self.source, *self.current))
            parts = [f"{self.label} matches its pins on {matching}: nothing to copy"]
        if self.shared:
            shared = ", ".join(f"{n} (with {other})" for n, other in self.shared)
            parts.append(f"shared cache, skipped: {shared}")
        return "; ".join(parts)


def _size(size: int) -> str:
    return f"{size / 2**30:.1f} GiB" if size >= 2**30 else f"{size / 2**20:.1f} MiB"


def model_dir(model: ModelFacts, cache: str) -> str:
    """`cache/hub/models--ORG--NAME`, refused when a component could leave the cache."""
    path = PurePosixPath(model.snapshot_path(cache)).parent.parent
    if not path.is_absolute() or any(p in (".", "..") for p in path.parts):
        raise InputError(f"model cache path {cache!r}: '.' and '..' components are refused")
    if any(c in str(path) for c in "\n\0"):
        raise InputError(f"model cache path {cache!r}: control characters are refused")
    if model.revision in (".", "..") or "/" in model.revision:
        raise InputError(f"revision {model.revision!r} is not one path component")
    return str(path)


def plan_model_sync(
    model: ModelFacts,
    nodes: Sequence[str],
    facts: Mapping[str, NodeFacts],
    identities: Mapping[str, CacheIdentity],
    *,
    source: str | None = None,
    fix: str = "",
) -> ModelSyncPlan:
    """Choose the source (given, else the first of `nodes` whose snapshot matches the pins, as
    preflight reads them) and the nodes of `nodes` to copy to: those whose snapshot is missing
    or does not match, one per distinct cache (the others of that cache are `shared`).
    `fix` ends the refusal when no node can be the source."""
    label = f"{model.repo}@{model.revision}"
    problems = {
        n: snapshot_problems(model, f) for n in [*nodes, *([source] if source else [])]
        if (f := facts.get(n)) and f.reachable
    }  # fmt: skip
    if source is not None:
        if source not in problems:
            raise InputError(f"source {source} is unreachable")
        if problems[source]:
            why = "; ".join(problems[source])
            raise InputError(f"source {source}'s snapshot of {label}: {why}")
    else:
        holders = [n for n in nodes if n in problems and not problems[n]]
        if not holders:
            raise InputError(f"no node of the cluster holds {label} matching its pins: {fix}")
        source = holders[0]
    owner: dict[str, str] = {}  # cache identity → the node that stands for it
    src_key = identities.get(source, CacheIdentity()).key
    if src_key:
        owner[src_key] = source
    copy, current, shared, reasons = [], [], [], []
    for node in nodes:
        if node == source or node not in problems:
            continue
        key = identities.get(node, CacheIdentity()).key
        if key and key in owner:
            shared.append((node, owner[key]))
            continue
        if key:
            owner[key] = node
        if problems[node]:
            copy.append(node)
            reasons.append((node, "; ".join(problems[node])))
        else:
            current.append(node)
    return ModelSyncPlan(
        source=source,
        label=label,
        copy=tuple(copy),
        current=tuple(current),
        shared=tuple(shared),
        unreachable=tuple(n for n in nodes if n not in problems),
        reasons=tuple(reasons),
    )


TAR_BLOCK = 512
TAR_RECORD = 20 * TAR_BLOCK


def tar_size(manifest: str) -> int:
    """The size of the tar stream SEND_SCRIPT writes, from MANIFEST_SCRIPT's `%y %s %p` lines:
    a header per entry (a GNU long-name header more past 99 bytes), file data in whole blocks,
    the end marker's header, two zero blocks, padded to a record."""
    total = TAR_BLOCK  # the end marker (empty file)
    for line in manifest.splitlines():
        kind, _, rest = line.partition(" ")
        size, _, path = rest.partition(" ")
        if not size.isdigit() or not path:
            continue
        total += TAR_BLOCK
        name = len(path.encode()) + (1 if kind == "d" else 0)
        if name > 99:
            total += TAR_BLOCK + -(-(name + 1) // TAR_BLOCK) * TAR_BLOCK
        if kind == "f":
            total += -(-int(size) // TAR_BLOCK) * TAR_BLOCK
    total += 2 * TAR_BLOCK
    return -(-total // TAR_RECORD) * TAR_RECORD


def _argv(script: str, name: str, *args: str) -> str:
    """One shell line: `bash -c SCRIPT NAME ARGS…`, every value quoted (never formatted in)."""
    return shlex.join(["bash", "-c", script, name, *args])


def identity_command(cache: str) -> str:
    return _argv(IDENTITY_SCRIPT, "cockpit-cache-id", cache)


def mark_command(cache: str, new_id: str) -> str:
    return _argv(MARK_SCRIPT, "cockpit-cache-mark", cache, new_id)


def manifest_command(folder: str, revision: str) -> str:
    return _argv(MANIFEST_SCRIPT, "cockpit-model-manifest", folder, revision)


def send_command(folder: str, revision: str) -> str:
    return _argv(SEND_SCRIPT, "cockpit-model-send", folder, revision)


def receive_command(folder: str, revision: str) -> str:
    return _argv(RECEIVE_SCRIPT, "cockpit-model-receive", folder, revision)
