"""Image sync planning (pure): the source, the peers, and the node-to-node transfer topology.

Topology: the source runs ONE `docker save` and feeds `width` relay chains. Each hop of a chain
`tee`s the stream to the next hop over `ssh` while loading it itself (`docker load`), so bytes go
node to node, never through the cockpit host, and the source's uplink carries `width` streams,
not one per peer. width 1 is a pure chain (time ≈ one transfer + one hop latency per peer);
width = number of peers is the classic parallel star (the source's uplink shared K ways).
See `benchmarks/sync_fanout.py` for the measured difference.

OpenSSH puts its stdio in non-blocking mode, which would make `tee` and `dd` sharing those file
descriptions fail with EAGAIN mid-stream: every background ssh gets its own stdout (/dev/null)
and its own stderr pipe (a `cat` that writes blocking).

The relay itself is generic (`relay_command`: any send command, any sink per node); the model
snapshot sync (`model_sync_plan`) runs its `tar` send and safe extract through it too.

Each hop reports on stderr (which ssh carries back up the chain to the cockpit):
  `@@dd NODE <dd status=progress line>`   bytes received so far,
  `@@load NODE <exit status>`              the sink (`docker load`) finished,
  `@@err NODE <sink error line>`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from cockpit.errors import InputError
from cockpit.ops.facts import NodeFacts

# One hop: $1 this script, $2 this node, $3 its sink (a shell command line reading the stream on
# stdin), $4... the rest of the chain as node/sink pairs.
HOP_SCRIPT = r"""S=$1 me=$2 sink=$3; shift 3
down=
if [ $# -ge 2 ]; then
  tmp=$(mktemp -d) || exit 1
  trap 'rm -rf -- "$tmp"' EXIT
  mkfifo -- "$tmp/down" || exit 1
  hop=$(printf '%q ' bash -c "$S" cockpit-hop "$S" "$@")
  ssh -o BatchMode=yes "$1" "$hop" < "$tmp/down" > /dev/null 2> >(cat >&2) &
  down=$!
  tee -p -- "$tmp/down"
else
  cat
fi | dd bs=1M status=progress 2> >(stdbuf -oL tr '\r' '\n' | sed -u "s/^/@@dd $me /" >&2) \
   | bash -c "$sink" 2> >(sed -u "s/^/@@err $me /" >&2) >/dev/null
status=${PIPESTATUS[2]}
printf '@@load %s %s\n' "$me" "$status" >&2
[ -n "$down" ] && wait "$down"
exit "$status"
"""

# The source: $1 the hop script, $2 the send command line (the stream on its stdout), $3... the
# chains as node/sink pairs, each chain ended by an empty argument.
SOURCE_SCRIPT = r"""S=$1 send=$2; shift 2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf -- "$tmp"' EXIT
fifos=() pids=() i=0 chain=()
while [ $# -gt 0 ]; do
  if [ -n "$1" ]; then chain+=("$1" "$2"); shift 2; continue; fi
  shift
  i=$((i+1)); f=$tmp/$i; mkfifo -- "$f" || exit 1; fifos+=("$f")
  hop=$(printf '%q ' bash -c "$S" cockpit-hop "$S" "${chain[@]}")
  ssh -o BatchMode=yes "${chain[0]}" "$hop" < "$f" > /dev/null 2> >(cat >&2) &
  pids+=($!) chain=()
done
bash -c "$send" | tee -p -- "${fifos[@]}" >/dev/null
status=${PIPESTATUS[0]}
for p in "${pids[@]}"; do wait "$p"; done
exit "$status"
"""


@dataclass(frozen=True)
class SyncPlan:
    """Who sends, who receives: `transfer` peers get the bytes along `chains`; `reattach` peers
    already hold the image id and only need the digest back (`docker pull repo@digest`); on the
    `remove` peers the digest resolves to a wrong image, removed (`docker rmi`) before anything
    else, or the pull would leave the digest on it and the id check would fail again."""

    source: str
    ref: str  # full `repo@sha256:…` as the source knows it
    image_id: str
    transfer: tuple[str, ...]
    reattach: tuple[str, ...]
    up_to_date: tuple[str, ...]
    chains: tuple[tuple[str, ...], ...]
    remove: tuple[tuple[str, str], ...] = ()  # (node, id of the wrong image the digest names)

    @property
    def peers(self) -> tuple[str, ...]:
        return self.transfer + self.reattach

    def describe(self) -> str:
        if not self.peers:
            return f"image present by digest on every node ({', '.join(self.up_to_date)})"
        parts = []
        if self.remove:
            wrong = ", ".join(f"{node} ({image[:19]})" for node, image in self.remove)
            parts.append(f"remove the wrong image on {wrong}")
        if self.transfer:
            routes = "; ".join(" → ".join((self.source, *c)) for c in self.chains)
            parts.append(f"transfer {routes}")
        if self.reattach:
            parts.append(f"re-attach digest on {', '.join(self.reattach)}")
        return ", ".join(parts)


def split_chains(peers: Sequence[str], width: int) -> tuple[tuple[str, ...], ...]:
    """`width` chains of nearly equal length (round-robin keeps the order within each)."""
    width = max(1, min(width, len(peers)))
    return tuple(tuple(peers[i::width]) for i in range(width) if peers[i::width])


def plan_sync(
    ref: str,
    nodes: Sequence[str],
    facts: Mapping[str, NodeFacts],
    *,
    source: str | None = None,
    width: int = 1,
) -> SyncPlan:
    """Choose the source (given, else the first node holding the image by digest with the
    recipe's pinned id: the cluster's own nodes first, then any other node in `facts`) and the
    peers among `nodes` lacking it (or holding a wrong image under its digest)."""
    if source is not None:
        fact = facts.get(source)
        if fact is None or not fact.reachable:
            raise InputError(f"source {source} is unreachable")
        if not fact.has_digest:
            raise InputError(f"source {source} does not hold {ref} by digest")
        if fact.wrong_id:
            raise InputError(
                f"on source {source}, {ref} resolves to {fact.wrong_id[:19]}, not the recipe's "
                "pinned image id: sync from another node"
            )
    else:
        ordered = [*nodes, *(n for n in facts if n not in nodes)]
        holders = [n for n in ordered if facts.get(n) and facts[n].holds_pinned]
        if not holders:
            raise InputError(
                f"no reachable node holds {ref} by digest with the recipe's image id: "
                "nothing to sync from"
            )
        source = holders[0]
    src = facts[source]
    assert src.image_id is not None
    peers = [n for n in nodes if n != source and n in facts and facts[n].reachable]
    up_to_date = tuple(
        n for n in peers if facts[n].holds_pinned and facts[n].image_id == src.image_id
    )
    reattach = tuple(
        n
        for n in peers
        if n not in up_to_date
        and facts[n].has_image_id
        and (not facts[n].has_digest or facts[n].wrong_id)
    )
    transfer = tuple(n for n in peers if n not in up_to_date and n not in reattach)
    remove = tuple((n, w) for n in peers if (w := facts[n].wrong_id))
    return SyncPlan(
        source=source,
        ref=src.full_ref or ref,
        image_id=src.image_id,
        transfer=transfer,
        reattach=reattach,
        up_to_date=(source, *up_to_date) if source in nodes else up_to_date,
        chains=split_chains(transfer, width),
        remove=remove,
    )


def relay_command(send: str, chains: Sequence[Sequence[str]], sink: Callable[[str], str]) -> str:
    """The shell command run on the source: `send` (a command line writing the stream) feeds every
    chain; each node of a chain runs `sink(node)` (a command line reading it on stdin) while
    passing the stream on. stderr is folded into stdout for the progress lines."""
    argv = ["bash", "-c", SOURCE_SCRIPT, "cockpit-sync", HOP_SCRIPT, send]
    for chain in chains:
        argv += [*(arg for node in chain for arg in (node, sink(node))), ""]
    return shlex.join(argv) + " 2>&1"


def image_relay_command(ref: str, chains: Sequence[Sequence[str]]) -> str:
    """The image relay: one `docker save` on the source, a `docker load` on every peer."""
    return relay_command(shlex.join(["docker", "save", "--", ref]), chains, lambda _: "docker load")


_DD_BYTES = re.compile(r"^(\d+) bytes")
_DD_SECONDS = re.compile(r"copied, ([\d.]+) s")


@dataclass(frozen=True)
class HopLine:
    """A parsed progress line of the relay: kind is "bytes", "loaded" or "error"."""

    kind: str
    node: str
    bytes: int = 0
    seconds: float | None = None
    status: int = 0
    text: str = ""


def parse_hop_line(line: str) -> HopLine | None:
    """A relay output line → HopLine; None for anything else (dd's record counts, blanks)."""
    tag, _, rest = line.strip().partition(" ")
    node, _, text = rest.partition(" ")
    if not node:
        return None
    if tag == "@@dd":
        match = _DD_BYTES.match(text)
        if not match:
            return None
        seconds = _DD_SECONDS.search(text)
        return HopLine(
            "bytes", node, int(match.group(1)), float(seconds.group(1)) if seconds else None
        )
    if tag == "@@load" and text.strip().lstrip("-").isdigit():
        return HopLine("loaded", node, status=int(text))
    if tag == "@@err" and text.strip():
        return HopLine("error", node, text=text.strip())
    return None


ETA_AFTER_S = 2.0
"""No estimate in a transfer's first seconds: a rate of a few packets says nothing (it once read
`~837767m40s left`)."""
ETA_MAX_S = 24 * 3600.0
"""An estimate beyond a day is a stalled link, not a plan: none is shown."""


def transfer_eta(done: int, total: int | None, elapsed: float) -> float | None:
    """Seconds left at the rate so far; None while unknown or not yet meaningful."""
    if not total or done <= 0 or done >= total or elapsed < ETA_AFTER_S:
        return None
    eta = (total - done) * elapsed / done
    return eta if eta <= ETA_MAX_S else None
