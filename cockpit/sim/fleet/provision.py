"""Build a simulated fleet's files: keys, node state seeded from the recipes, tools, inventory.

Seed state (shared/seed §2 "image currently only on dgx5-8"): a SparkRing image sits with its
digest on the upper half of the fleet (dgx5-8 of eight nodes); every other recipe image on every
node. Digests and image ids known only by prefix become full values with `derive_hex`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path

import asyncssh
import tomli_w

from cockpit.config import load_inventory
from cockpit.sim.engine.text import TOKENIZER_DIR as ENGINE_TOKENIZER_DIR
from cockpit.sim.fleet.identity import active_hcas, write_identity, write_identity_tools
from cockpit.sim.fleet.layout import FleetConfig, FleetLayout, node_host, node_names
from cockpit.sim.fleet.sshconfig import write_ssh_config
from cockpit.sim.tools.launchers import PROJECT_ROOT, write_launchers
from cockpit.sim.tools.nodestate import GIB, NodeState, derive_hex, new_image

SNAPSHOTS = Path(__file__).resolve().parents[1] / "snapshots"
HCAS = ["rocep1s0f0", "roceP2p1s0f0", "rocep1s0f1", "roceP2p1s0f1"]
MODEL_CACHE = "hf-cache"  # relative to a node's $HOME, where every session starts
COMPILE_CACHE = "vllm-cache"


@dataclass(frozen=True)
class SeedImage:
    """One recipe image as the simulator materialises it."""

    repo: str
    digest: str
    image_id: str
    size_bytes: int
    tags: list[str]
    labels: dict[str, str]
    entrypoint: list[str]
    only_upper_half: bool


def seed_images(recipes_dir: Path) -> list[SeedImage]:
    """The distinct images of the recipes, with full digests and ids."""
    inventory = load_inventory(recipes_dir)
    seen: dict[str, SeedImage] = {}
    for recipe in inventory.recipes.values():
        image = recipe.image
        if image.repository + image.digest in seen:
            continue
        digest = "sha256:" + derive_hex(image.digest, "digest:" + image.repository)
        image_id = derive_hex(image.image_id, f"image-id:{image.repository}@{digest}")
        labels = (
            {"org.opencontainers.image.version": image.publication} if image.publication else {}
        )
        if image.base:
            labels["org.opencontainers.image.base.name"] = image.base
        seen[image.repository + image.digest] = SeedImage(
            repo=image.repository,
            digest=digest,
            image_id=image_id,
            size_bytes=int(image.size_gib * GIB) or GIB,
            tags=[f"{image.repository}:{image.publication}"] if image.publication else [],
            labels=labels,
            entrypoint=list(recipe.launcher.entrypoint),
            only_upper_half="sparkring" in image.repository,
        )
    return list(seen.values())


def snapshot_trees(recipes_dir: Path, snapshots: Path) -> list[tuple[str, str, Path]]:
    """(repo, revision, placeholder tree) for each recipe model with a tree in `snapshots`
    (laid out as ORG--NAME/REVISION/...)."""
    inventory = load_inventory(recipes_dir)
    trees = []
    for repo, revision in sorted(
        {(r.model.repo, r.model.revision) for r in inventory.recipes.values()}
    ):
        source = snapshots / repo.replace("/", "--") / revision
        if source.is_dir():
            trees.append((repo, revision, source))
    return trees


def generate_key(path: Path, comment: str) -> asyncssh.SSHKey:
    key = asyncssh.generate_private_key("ssh-ed25519", comment=comment)
    key.write_private_key(str(path))
    path.chmod(0o600)
    key.write_public_key(str(path) + ".pub")
    return key


def public_line(key: asyncssh.SSHKey) -> str:
    return key.export_public_key().decode().strip()


def node_env(layout: FleetLayout, config: FleetConfig, name: str) -> dict[str, str]:
    """What every session on the node sees (PATH gets COCKPIT_SIM_BIN prepended)."""
    node_dir = layout.node_dir(name)
    env = {
        "COCKPIT_SIM_NODE": name,
        "COCKPIT_SIM_NODE_DIR": str(node_dir),
        "COCKPIT_SIM_NODE_ADDR": node_host(name, config.subnet),
        "COCKPIT_SIM_FLEET_DIR": str(layout.root),
        "COCKPIT_SIM_SPEED": repr(config.speed),
        "COCKPIT_SIM_BIN": str(layout.bin_dir),
        "HOME": str(node_dir / "home"),
    }
    if config.boot_speed:
        env["COCKPIT_SIM_BOOT_SPEED"] = repr(config.boot_speed)
    if config.link_mbps:
        env["COCKPIT_SIM_LINK_MBPS"] = repr(config.link_mbps)
    return env


def provision(layout: FleetLayout, config: FleetConfig) -> dict[str, asyncssh.SSHKey]:
    """Create every file the fleet needs except those that name the port; return host keys."""
    recipes_dir = Path(config.recipes_dir)
    for stale in (layout.nodes_dir, layout.ssh_dir, layout.sshd_dir, layout.bin_dir):
        shutil.rmtree(stale, ignore_errors=True)
    layout.ssh_dir.mkdir(parents=True)
    write_launchers(layout.bin_dir)
    write_identity_tools(layout.bin_dir, PROJECT_ROOT)
    client = generate_key(layout.root / "client_key", "cockpit-sim-client")
    internal = generate_key(layout.ssh_dir / "internal_key", "cockpit-sim-internal")
    (layout.ssh_dir / "authorized_keys").write_text(
        public_line(client) + "\n" + public_line(internal) + "\n"
    )
    images = seed_images(recipes_dir)
    registry = {f"{i.repo}@{i.digest}": f"sha256:{i.image_id}" for i in images}
    layout.registry.write_text(json.dumps(registry, indent=1))
    names = node_names(config.nodes)
    clusters = fitting_clusters(recipes_dir, names)
    host_keys = {}
    trees = snapshot_trees(recipes_dir, Path(config.snapshots_dir or SNAPSHOTS))
    for index, name in enumerate(names, start=1):
        node_dir = layout.node_dir(name)
        (node_dir / "ssh").mkdir(parents=True)
        (node_dir / "containers").mkdir()
        (node_dir / "home" / COMPILE_CACHE).mkdir(parents=True)
        (node_dir / "hf-cache" / "hub").mkdir(parents=True)
        os.symlink("../hf-cache", node_dir / "home" / MODEL_CACHE)
        host_keys[name] = generate_key(node_dir / "ssh" / "ssh_host_ed25519_key", name)
        write_identity(
            node_dir,
            name,
            node_host(name, config.subnet),
            HCAS,
            active_hcas(clusters, name),
            node_dir / "ssh" / "ssh_host_ed25519_key.pub",
        )
        state = NodeState(node_dir)
        upper = index > config.nodes // 2
        state.write(
            "images.json",
            [
                new_image(
                    repo=i.repo,
                    image_id=i.image_id,
                    size_bytes=i.size_bytes,
                    digest=i.digest,
                    tags=i.tags,
                    labels=i.labels,
                    entrypoint=i.entrypoint,
                    engine=True,
                )
                for i in images
                if upper or not i.only_upper_half
            ],
        )
        state.write("containers.json", [])
        state.write("node.json", {"hcas": HCAS, "faults": {}})
        env = node_env(layout, config, name)
        (node_dir / "env").write_text("".join(f"{k}={v}\n" for k, v in env.items()))
        for repo, revision, source in trees:
            copy_snapshot(node_dir, repo, revision, source)
    return host_keys


def copy_snapshot(node_dir: Path, repo: str, revision: str, source: Path) -> None:
    """The placeholder snapshot, with the simulated engine's tokenizer as its own: a bench
    reads a lane's tokenizer from its snapshot on the node, simulated or not."""
    model_dir = node_dir / "hf-cache" / "hub" / ("models--" + repo.replace("/", "--"))
    target = model_dir / "snapshots" / revision
    shutil.copytree(source, target)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(ENGINE_TOKENIZER_DIR / name, target / name)
    (model_dir / "refs").mkdir(exist_ok=True)
    (model_dir / "refs" / "main").write_text(revision)


def fitted_recipe(text: str, clusters: set[str]) -> str | None:
    """The recipe with `lane.clusters` narrowed to the clusters the fleet has (None: no fit).

    Only that one line changes, so comments and layout of the recipe stay as written."""
    wanted = tomllib.loads(text)["lane"]["clusters"]
    kept = [c for c in wanted if c in clusters]
    if not kept:
        return None
    if kept == wanted:
        return text
    line = "clusters = " + json.dumps(kept) + "  # narrowed to the simulated fleet's clusters"
    return re.sub(r"(?m)^clusters\s*=\s*\[[^\]]*\].*$", line, text, count=1)


def fitting_clusters(recipes_dir: Path, names: list[str]) -> dict[str, dict[str, object]]:
    """The project's clusters whose nodes the fleet has."""
    project = tomllib.loads((recipes_dir / "clusters.toml").read_text())
    return {
        cname: cluster
        for cname, cluster in project.get("clusters", {}).items()
        if set(cluster["nodes"]) <= set(names)
    }


def write_inventory(
    layout: FleetLayout,
    config: FleetConfig,
    port: int,
    host_keys: dict[str, asyncssh.SSHKey],
    identity: str,
) -> None:
    """clusters.toml (schema of the project's), known_hosts, ssh_config, recipes, fleet.json
    (which names the fleet's identity mode, see `cockpit.sim.fleet.namespaces`)."""
    recipes_dir = Path(config.recipes_dir)
    names = node_names(config.nodes)
    project = tomllib.loads((recipes_dir / "clusters.toml").read_text())
    defaults = dict(project.get("defaults", {}))
    defaults.update(
        ssh_user=config.user, ssh_port=port, model_cache=MODEL_CACHE, compile_cache=COMPILE_CACHE
    )
    ssh = dict(project.get("ssh", {}))
    ssh.update(known_hosts="known_hosts", identity_files=["client_key"])
    clusters = fitting_clusters(recipes_dir, names)
    document = {
        "defaults": defaults,
        "ssh": ssh,
        "nodes": {
            n: {"host": node_host(n, config.subnet), "port": port, "user": config.user}
            for n in names
        },
        "clusters": clusters,
    }
    header = (
        f"# Simulated fleet of {config.nodes} nodes on loopback, written by `cockpit sim up`.\n"
        "# model_cache is relative: every session starts in the node's own $HOME.\n\n"
    )
    (layout.root / "clusters.toml").write_text(header + tomli_w.dumps(document))
    known = "".join(
        f"[{node_host(n, config.subnet)}]:{port} {public_line(host_keys[n])}\n" for n in names
    )
    (layout.root / "known_hosts").write_text(known)
    (layout.ssh_dir / "known_hosts").write_text(known)
    hosts = {n: node_host(n, config.subnet) for n in names}
    write_ssh_config(layout.root, hosts, port, config.user)
    for recipe in recipes_dir.glob("*.toml"):
        if recipe.name != "clusters.toml":
            text = fitted_recipe(recipe.read_text(), set(clusters))
            if text is not None:
                (layout.root / recipe.name).write_text(text)
    fleet = {
        "server": config.server,
        "identity": identity,
        "user": config.user,
        "port": port,
        "speed": config.speed,
        "links": config.links,
        "nodes": {n: {"host": node_host(n, config.subnet), "port": port} for n in names},
    }
    layout.fleet_json.write_text(json.dumps(fleet, indent=1))
