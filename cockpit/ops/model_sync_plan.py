"""Model snapshot sync planning (pure): who holds the pinned snapshot, who needs it, which caches
are one and the same, and the shell commands that move it.

The snapshot is the HF cache layout under the node's model cache:
`hub/models--ORG--NAME/snapshots/REV/` (files, or symlinks into `../../blobs/`) and the blobs
those symlinks name. The source runs `tar -cf -` of exactly that (blobs first, the snapshot
folder, then an end marker from a temp dir), less the blobs every destination holds whole; the
image sync's relay (`sync_plan.relay_command`) carries it node to node, and each hop runs
`tar -xf -` into a temp folder beside the model (same filesystem), and only when tar succeeded
AND the end marker arrived moves the blobs into place and renames the snapshot folder over the
old one. A copy cut anywhere — even exactly between two tar members, which tar itself accepts as
a whole archive — never lands at the snapshot's path; of a cut copy, only the blobs that arrived
whole (content matching their sha256 name) are kept, for the re-run to leave out.

Nodes whose caches are one (a NAS mounted everywhere, as the seed's `/srv/hf-cache`) are told
apart by a marker file in the cache holding a random id (written once, `set -C` so two nodes of
one cache keep the first), else by the cache folder's device:inode.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from cockpit.config.models import ModelFacts
from cockpit.errors import InputError
from cockpit.ops.facts import NodeFacts
from cockpit.ops.preflight import snapshot_problems
from cockpit.ops.sync_plan import relay_command, split_chains

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

# $1 the model folder, $2 the revision, $3... blob names left out (every destination holds them):
# the tar stream on stdout.
SEND_SCRIPT = """cd -- "$1" || exit 1
[ -d "snapshots/$2" ] || { echo "no snapshots/$2 under $1" >&2; exit 1; }
declare -A skip=(); for n in "${@:3}"; do skip[$n]=1; done
tmp=$(mktemp -d) || exit 1
trap 'rm -rf -- "$tmp"' EXIT
: > "$tmp/.cockpit-end"
find -P "snapshots/$2" -type l -printf '%l\\0' | while IFS= read -r -d '' t; do
  n=${t##*/}; b=blobs/$n
  [[ $n =~ ^[0-9a-f]{64}$ && -n ${skip[$n]:-} ]] || { [ -f "$b" ] && printf '%s\\0' "$b"; }
done | sort -zu > "$tmp/list"
printf 'snapshots/%s\\0' "$2" >> "$tmp/list"
tar -cf - --null -T "$tmp/list" -C "$tmp" .cockpit-end
"""

# `salvage DIR`: the blobs of DIR (a receive's temp folder) that arrived whole (their content's
# sha256 is their name) moved into "$model/blobs".
_SALVAGE = """salvage() {
  mkdir -p -- "$model/blobs" || return
  for b in "$1"/blobs/*; do
    n=${b##*/}
    [[ $n =~ ^[0-9a-f]{64}$ ]] && [ -f "$b" ] && [ ! -L "$b" ] || continue
    [ "$(sha256sum < "$b")" = "$n  -" ] && mv -f -- "$b" "$model/blobs/"
  done
}
"""

# $1 the model folder, $2 the revision; the tar stream on stdin. A cut stream keeps its whole
# blobs (a re-run need not send them again), never the snapshot folder. SIGPIPE and SIGHUP are
# ignored (a relay hop's stderr and channel may be gone when the stream is cut): the salvage
# runs, or, when the hop is killed outright, the temp folder stays for HELD_SCRIPT to salvage.
RECEIVE_SCRIPT = (
    """model=$1 rev=$2
trap '' PIPE HUP
mkdir -p -- "$model" || exit 1
for old in "$model"/.cockpit-sync.*; do [ -e "$old" ] && rm -rf -- "$old"; done
tmp=$(mktemp -d -- "$model/.cockpit-sync.XXXXXX") || exit 1
trap 'rm -rf -- "$tmp"' EXIT
"""
    + _SALVAGE
    + """tar -xf - -C "$tmp" --no-same-owner || {
  salvage "$tmp"; echo "tar could not extract the stream" >&2; exit 1; }
[ -e "$tmp/.cockpit-end" ] || {
  salvage "$tmp"; echo "the stream was cut before its end" >&2; exit 1; }
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
)

# $1 the model folder, $2... blob name and size pairs. Salvages (then removes) what a killed
# receive left, and prints the names whose blob is there, of that size, and whole.
HELD_SCRIPT = (
    """model=$1; shift
[ -d "$model" ] || exit 0
"""
    + _SALVAGE
    + """for old in "$model"/.cockpit-sync.*; do
  [ -d "$old" ] && { salvage "$old"; rm -rf -- "$old"; }
done
while [ $# -ge 2 ]; do
  n=$1 size=$2; shift 2; b=$model/blobs/$n
  [ -f "$b" ] && [ ! -L "$b" ] && [ "$(stat -c %s -- "$b")" = "$size" ] || continue
  [ "$(sha256sum < "$b")" = "$n  -" ] && printf '%s\\n' "$n"
done
"""
)


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
    chains: tuple[tuple[str, ...], ...] = ()  # the relay chains over `copy` (see `sync_plan`)

    @property
    def verify(self) -> tuple[str, ...]:
        """The nodes whose pins are read again after the copy."""
        return self.copy + tuple(node for node, _ in self.shared)

    def describe(self) -> str:
        why = dict(self.reasons)
        if self.copy:
            size = f" ({_size(self.total_bytes)})" if self.total_bytes else ""
            routes = "; ".join(
                " → ".join((self.source, *(f"{n} ({why[n]})" if n in why else n for n in chain)))
                for chain in self.chains or (self.copy,)
            )
            parts = [f"copy {self.label}{size} {routes}"]
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
    width: int = 1,
) -> ModelSyncPlan:
    """Choose the source (given, else the first of `nodes` whose snapshot matches the pins, as
    preflight reads them) and the nodes of `nodes` to copy to: those whose snapshot is missing
    or does not match, one per distinct cache (the others of that cache are `shared`), in
    `width` relay chains.
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
        chains=split_chains(copy, width),
    )


_SHA256 = re.compile(r"[0-9a-f]{64}")
TAR_BLOCK = 512
TAR_RECORD = 20 * TAR_BLOCK


def manifest_blobs(manifest: str) -> dict[str, int]:
    """{blob name: size} of MANIFEST_SCRIPT's blobs named by a sha256 (the ones a destination
    can prove whole, so a re-run may leave them out)."""
    blobs = {}
    for line in manifest.splitlines():
        kind, _, rest = line.partition(" ")
        size, _, path = rest.partition(" ")
        name = path.removeprefix("blobs/")
        if kind == "f" and size.isdigit() and name != path and _SHA256.fullmatch(name):
            blobs[name] = int(size)
    return blobs


def tar_size(manifest: str, skip: Collection[str] = ()) -> int:
    """The size of the tar stream SEND_SCRIPT writes, from MANIFEST_SCRIPT's `%y %s %p` lines
    (less the blobs named in `skip`): a header per entry (a GNU long-name header more past 99
    bytes), file data in whole blocks, the end marker's header, two zero blocks, padded to a
    record."""
    total = TAR_BLOCK  # the end marker (empty file)
    for line in manifest.splitlines():
        kind, _, rest = line.partition(" ")
        size, _, path = rest.partition(" ")
        if not size.isdigit() or not path or path.removeprefix("blobs/") in skip:
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


def send_command(folder: str, revision: str, skip: Collection[str] = ()) -> str:
    return _argv(SEND_SCRIPT, "cockpit-model-send", folder, revision, *sorted(skip))


def receive_command(folder: str, revision: str) -> str:
    return _argv(RECEIVE_SCRIPT, "cockpit-model-receive", folder, revision)


def held_command(folder: str, blobs: Mapping[str, int]) -> str:
    pairs = (arg for name, size in sorted(blobs.items()) for arg in (name, str(size)))
    return _argv(HELD_SCRIPT, "cockpit-model-held", folder, *pairs)


def parse_held(text: str, blobs: Collection[str]) -> frozenset[str]:
    """HELD_SCRIPT's output → the names (of `blobs`) the node holds whole."""
    return frozenset(line.strip() for line in text.splitlines() if line.strip() in blobs)


def model_relay_command(
    plan: ModelSyncPlan, folders: Mapping[str, str], revision: str, skip: Collection[str] = ()
) -> str:
    """The snapshot relay along `plan.chains`: one `tar` on the source (less the `skip` blobs,
    held by every destination), the safe extract on every hop (see `sync_plan.relay_command`)."""
    return relay_command(
        send_command(folders[plan.source], revision, skip),
        plan.chains,
        lambda node: receive_command(folders[node], revision),
    )
