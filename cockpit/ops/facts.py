"""What a node says about itself before a lane operation, gathered in one SSH round trip.

`facts_command` is one constant bash script with the recipe's values passed as positional
arguments (never formatted into the script); `parse_facts` turns its sectioned output into a
`NodeFacts`. Both are pure; `collect_facts` is the thin async shell that runs it on many nodes.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Self

from cockpit.config import Inventory
from cockpit.config.models import Cluster, Recipe
from cockpit.ssh import SshError, SshPool
from cockpit.telemetry.docker_out import (
    ContainerRow,
    ImageInfo,
    image_with_digest,
    image_with_id,
    parse_image_inspect,
    parse_ps,
)
from cockpit.telemetry.gpu import ComputeApp, parse_compute_apps

CONFIG_FILE = "config.json"
INDEX_FILE = "model.safetensors.index.json"
FACTS_TIMEOUT_S = 20.0

_MODEL_SCRIPT = """\
echo @@config
head -c 262144 -- "$snap/config.json" 2>/dev/null; echo
echo @@weights
if [ -e "$snap/model.safetensors.index.json" ]; then
  grep -o '"total_size"[[:space:]]*:[[:space:]]*[0-9]*' -- "$snap/model.safetensors.index.json" \\
    2>/dev/null | head -n 1
else stat -L -c 'file %s' -- "$snap"/*.safetensors 2>/dev/null; fi
"""
"""What the memory fit reads in the snapshot: config.json (the KV's layers, heads and head
sizes) and the weights' bytes (the index's total_size; a model without an index: the sizes of
its safetensors files)."""

_NODE_SCRIPT = """\
snap=$1
echo @@images
ids=$(docker image ls -q --no-trunc 2>/dev/null | sort -u)
[ -n "$ids" ] && docker image inspect -- $ids 2>/dev/null
echo @@containers; docker ps -a --filter label=cockpit.lane --format '{{json .}}' 2>&1
echo @@snapshot
( cd -- "$snap" 2>/dev/null && echo present \\
  && sha256sum -- config.json model.safetensors.index.json 2>/dev/null )
echo @@listen; ss -Hltn 2>/dev/null
echo @@gpu
nvidia-smi --query-compute-apps=pid,process_name,used_gpu_memory --format=csv,noheader,nounits \
  2>/dev/null
"""
_FACTS_SCRIPT = _NODE_SCRIPT + _MODEL_SCRIPT + "echo @@end\n"
_MODEL_FILES_SCRIPT = "snap=$1\n" + _MODEL_SCRIPT + "echo @@end\n"


@dataclass(frozen=True)
class NodeFacts:
    """One node's answers; `unreachable` holds the reason when SSH could not run the script."""

    node: str
    unreachable: str | None = None
    image_id: str | None = None  # the id the recipe's reference resolves to (present by digest)
    full_ref: str | None = None  # the full `repo@sha256:…` the recipe's reference resolves to
    image_size: int | None = None
    has_image_id: bool = False  # the recipe's pinned image id is present (perhaps without digest)
    wrong_id: str | None = None  # the id the digest resolves to when it is not the pinned one
    containers: tuple[ContainerRow, ...] = ()  # every cockpit-labelled container, running or not
    snapshot_present: bool = False
    config_sha256: str | None = None
    index_sha256: str | None = None
    listening: tuple[tuple[str, int], ...] = ()  # (local address, port) of listening TCP sockets
    gpu_apps: tuple[ComputeApp, ...] = ()
    model_config: str = ""  # the snapshot's config.json as the node has it ("" when absent)
    weights_bytes: int | None = None  # the snapshot's weights (None when unreadable)
    complete: bool = True  # False when the script's output was cut short

    @property
    def reachable(self) -> bool:
        return self.unreachable is None

    @property
    def has_digest(self) -> bool:
        return self.image_id is not None

    @property
    def holds_pinned(self) -> bool:
        """The digest resolves, to the recipe's pinned image id: a node to sync from."""
        return self.has_digest and self.wrong_id is None

    def running(self) -> tuple[ContainerRow, ...]:
        return tuple(c for c in self.containers if c.state == "running")


def facts_command(recipe: Recipe, model_cache: str) -> list[str]:
    """The argv that prints a node's facts for this recipe (values passed as arguments)."""
    snapshot = recipe.model.snapshot_path(model_cache)
    return ["bash", "-c", _FACTS_SCRIPT, "cockpit-facts", snapshot]


def model_files_command(recipe: Recipe, model_cache: str) -> list[str]:
    """The argv that prints only what the memory fit reads (before a plan is shown)."""
    snapshot = recipe.model.snapshot_path(model_cache)
    return ["bash", "-c", _MODEL_FILES_SCRIPT, "cockpit-model", snapshot]


def _sections(text: str) -> dict[str, str]:
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("@@") and " " not in line:
            current = sections.setdefault(line[2:], [])
        elif current is not None:
            current.append(line)
    return {name: "\n".join(lines) for name, lines in sections.items()}


def parse_listening(text: str) -> tuple[tuple[str, int], ...]:
    """`ss -Hltn` rows → (local address, port); IPv6 brackets dropped, `*` kept."""
    out = []
    for line in text.splitlines():
        cells = line.split()
        if len(cells) < 4:
            continue
        addr, _, port = cells[3].rpartition(":")
        if port.isdigit():
            out.append((addr.strip("[]").split("%")[0], int(port)))
    return tuple(out)


def port_taken(listening: Iterable[tuple[str, int]], addr: str, port: int) -> bool:
    """True when something listens on `port` where a server bound to `addr` would collide.

    A wildcard listener always collides; a specific address collides when it is `addr` (when
    `addr` is a host name, not an IP, any listener on the port counts: we cannot tell).
    """
    try:
        ipaddress.ip_address(addr)
        is_ip = True
    except ValueError:
        is_ip = False
    for local, local_port in listening:
        if local_port != port:
            continue
        if local in ("*", "0.0.0.0", "::") or not is_ip or local == addr:
            return True
    return False


def _sha_of(text: str, name: str) -> str | None:
    for line in text.splitlines():
        digest, _, path = line.partition("  ")
        if path.strip() == name:
            return digest.strip().lower()
    return None


def parse_weights(text: str) -> int | None:
    """The weights' bytes from the model section: the index's total_size, else the sum of the
    safetensors files' sizes; None when neither is there."""
    total = re.search(r'"total_size"\s*:\s*(\d+)', text)
    if total:
        return int(total.group(1))
    sizes = [int(size) for size in re.findall(r"^file (\d+)$", text, re.MULTILINE)]
    return sum(sizes) if sizes else None


def same_id(got: str, pin: str) -> bool:
    """An image id against a recipe's pin (which may be a prefix, with or without `sha256:`)."""
    return got.removeprefix("sha256:").startswith(pin.removeprefix("sha256:"))


def resolve_digest_ref(ref: str, repo_digests: Iterable[str]) -> str | None:
    """The full `repo@sha256:…` among an image's RepoDigests that `ref` names (a recipe may pin
    a digest prefix of at least 8 hex digits, as the seed does), None when none matches."""
    for entry in repo_digests:
        if image_with_digest([ImageInfo(id="", repo_digests=(entry,))], ref):
            return entry
    return None


def parse_facts(node: str, text: str, ref: str, image_id: str) -> NodeFacts:
    """The facts script's output → NodeFacts for the image `ref` (pinned id `image_id`);
    missing sections read as absent, never raise."""
    sections = _sections(text)
    images = parse_image_inspect(sections.get("images", ""))
    by_digest = image_with_digest(images, ref)
    snapshot = sections.get("snapshot", "")
    wrong = by_digest is not None and bool(image_id) and not same_id(by_digest.id, image_id)
    pinned = image_with_id(images, image_id) if image_id else by_digest
    return NodeFacts(
        node=node,
        image_id=by_digest.id if by_digest else None,
        full_ref=resolve_digest_ref(ref, by_digest.repo_digests) if by_digest else None,
        image_size=by_digest.size if by_digest else None,
        has_image_id=pinned is not None,
        wrong_id=by_digest.id if wrong and by_digest else None,
        containers=tuple(parse_ps(sections.get("containers", ""))),
        snapshot_present=snapshot.startswith("present"),
        config_sha256=_sha_of(snapshot, CONFIG_FILE),
        index_sha256=_sha_of(snapshot, INDEX_FILE),
        listening=parse_listening(sections.get("listen", "")),
        gpu_apps=tuple(parse_compute_apps(sections.get("gpu", ""))),
        model_config=sections.get("config", "").strip(),
        weights_bytes=parse_weights(sections.get("weights", "")),
        complete="end" in sections,
    )


@dataclass
class FactsCollector:
    """Runs the facts script on nodes concurrently; an unreachable node costs only its timeout."""

    pool: SshPool
    recipe: Recipe
    model_cache: str
    timeout: float = FACTS_TIMEOUT_S
    node_caches: Mapping[str, str] = field(default_factory=dict)  # a node's own model cache

    @classmethod
    def of(cls, pool: SshPool, inventory: Inventory, recipe: Recipe, cluster: Cluster) -> Self:
        """The collector of `recipe`'s facts on `cluster`'s nodes (each with its model cache)."""
        caches = inventory.model_caches(cluster)
        return cls(pool, recipe, inventory.model_cache_of(cluster), node_caches=caches)

    async def collect(self, nodes: Iterable[str]) -> dict[str, NodeFacts]:
        names = list(dict.fromkeys(nodes))
        argvs = {n: facts_command(self.recipe, self.cache_of(n)) for n in names}
        results = await asyncio.gather(*(self._one(n, argvs[n]) for n in names))
        return dict(zip(names, results, strict=True))

    async def model_files(self, node: str) -> NodeFacts:
        """`node`'s answers to the model section alone (config.json, the weights' bytes)."""
        return await self._one(node, model_files_command(self.recipe, self.cache_of(node)))

    def cache_of(self, node: str) -> str:
        return self.node_caches.get(node, self.model_cache)

    async def _one(self, node: str, argv: list[str]) -> NodeFacts:
        try:
            result = await self.pool.run(node, argv, timeout=self.timeout)
        except SshError as exc:
            return NodeFacts(node=node, unreachable=exc.reason)
        facts = parse_facts(node, result.stdout, self.recipe.image.ref, self.recipe.image.image_id)
        if not facts.complete:
            reason = (result.stderr.strip().splitlines() or ["facts script cut short"])[-1]
            return NodeFacts(node=node, unreachable=reason)
        return facts


def lanes_running(facts: Mapping[str, NodeFacts]) -> dict[str, dict[str, str]]:
    """lane → {node: cluster} of every running cockpit container in these facts."""
    lanes: dict[str, dict[str, str]] = {}
    for node, fact in facts.items():
        for row in fact.running():
            lane = row.labels.get("cockpit.lane")
            if lane:
                lanes.setdefault(lane, {})[node] = row.labels.get("cockpit.cluster", "")
    return lanes
