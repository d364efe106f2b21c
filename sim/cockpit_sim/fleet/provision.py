"""Build a simulated fleet's files: keys, node state seeded from the recipes, tools, inventory.

Seed state (shared/seed §2 "image currently only on dgx5-8"): a SparkRing image sits with its
digest on the upper half of the fleet (dgx5-8 of eight nodes); every other recipe image on every
node. Digests and image ids known only by prefix become full values with `derive_hex`.

With real Docker (`FleetConfig.docker == "real"`) the node's `docker` is Debian's client talking
to the node's own daemon (DOCKER_HOST in the session env), the images are real ones built at start
(`lane_images`; the same seed state, pulled by digest), and the model cache is one folder every
node mounts at the same absolute path, as the seed's NAS-backed `/srv/hf-cache` is: a real daemon
resolves `-v` sources itself, so a relative cache path would be a named (empty) volume.
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
from cockpit_sim.engine.text import TOKENIZER_DIR as ENGINE_TOKENIZER_DIR
from cockpit_sim.fleet.docker_fleet import DockerFleet
from cockpit_sim.fleet.identity import active_hcas, write_identity, write_identity_tools
from cockpit_sim.fleet.lane_images import ImageSpec, LaneImage, rewrite_recipe
from cockpit_sim.fleet.layout import FleetConfig, FleetLayout, node_host, node_names
from cockpit_sim.fleet.realdocker import DOCKER
from cockpit_sim.fleet.sshconfig import write_ssh_config
from cockpit_sim.tools.launchers import write_launchers
from cockpit_sim.tools.nodestate import GIB, NodeState, derive_hex, new_image

SNAPSHOTS = Path(__file__).resolve().parents[1] / "snapshots"
HCAS = ["rocep1s0f0", "roceP2p1s0f0", "rocep1s0f1", "roceP2p1s0f1"]
MODEL_CACHE = "hf-cache"  # in the node's folder; the inventory names it by its absolute path
COMPILE_CACHE = "vllm-cache"  # in the node's $HOME


@dataclass(frozen=True)
class SeedImage:
    """One recipe image as the simulator materialises it."""

    source_ref: str  # the recipes' reference
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
            source_ref=image.ref,
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


def holders(image: SeedImage, names: list[str]) -> list[str]:
    """The nodes that hold `image` in the seed state (a SparkRing image: the upper half)."""
    return names[len(names) // 2 :] if image.only_upper_half else list(names)


def image_specs(recipes_dir: Path, names: list[str]) -> list[tuple[ImageSpec, list[str]]]:
    """What a real-Docker fleet builds, and the nodes each image is pulled onto."""
    specs = []
    for image in seed_images(recipes_dir):
        tag = image.tags[0].rsplit(":", 1)[-1] if image.tags else "latest"
        spec = ImageSpec(image.source_ref, image.repo, tag, image.labels, image.entrypoint)
        specs.append((spec, holders(image, names)))
    return specs


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


def node_env(
    layout: FleetLayout, config: FleetConfig, name: str, docker_host: str | None = None
) -> dict[str, str]:
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
    if docker_host:
        env["DOCKER_HOST"] = docker_host
        env["COCKPIT_SIM_DOCKER"] = "real"  # image streams are real bytes (the ssh shim's rates)
    return env


def provision(
    layout: FleetLayout, config: FleetConfig, docker: DockerFleet | None = None
) -> dict[str, asyncssh.SSHKey]:
    """Create every file the fleet needs except those that name the port; return host keys.
    With `docker` (a real-Docker fleet) its daemons' socket folders are chosen here too."""
    recipes_dir = Path(config.recipes_dir)
    for stale in (layout.nodes_dir, layout.ssh_dir, layout.sshd_dir, layout.bin_dir):
        shutil.rmtree(stale, ignore_errors=True)
    shutil.rmtree(layout.nas_dir, ignore_errors=True)
    layout.ssh_dir.mkdir(parents=True)
    write_launchers(layout.bin_dir, docker_client=DOCKER if docker else None)
    write_identity_tools(layout.bin_dir)
    client = generate_key(layout.root / "client_key", "cockpit-sim-client")
    internal = generate_key(layout.ssh_dir / "internal_key", "cockpit-sim-internal")
    (layout.ssh_dir / "authorized_keys").write_text(
        public_line(client) + "\n" + public_line(internal) + "\n"
    )
    images = seed_images(recipes_dir)
    registry = {f"{i.repo}@{i.digest}": f"sha256:{i.image_id}" for i in images}
    layout.registry.unlink(missing_ok=True)
    if docker is None:  # the simulated docker's registry (a real one serves a real fleet)
        layout.registry.write_text(json.dumps(registry, indent=1))
    names = node_names(config.nodes)
    clusters = fitting_clusters(recipes_dir, names)
    host_keys = {}
    trees = snapshot_trees(recipes_dir, Path(config.snapshots_dir or SNAPSHOTS))
    for name in names:
        (layout.node_dir(name) / "ssh").mkdir(parents=True)
    hosts = docker.prepare() if docker else {}
    if docker:  # one cache for all, as a NAS mounted on every node
        (layout.nas_dir / "hf-cache" / "hub").mkdir(parents=True)
        (layout.nas_dir / COMPILE_CACHE).mkdir()
        for repo, revision, source in trees:
            copy_snapshot(layout.nas_dir, repo, revision, source)
    for index, name in enumerate(names, start=1):
        node_dir = layout.node_dir(name)
        (node_dir / "containers").mkdir()
        (node_dir / "home" / COMPILE_CACHE).mkdir(parents=True)
        if docker:
            os.symlink(
                os.path.relpath(layout.nas_dir / "hf-cache", node_dir), node_dir / "hf-cache"
            )
        else:
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
            []
            if docker
            else [
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
        env = node_env(layout, config, name, hosts.get(name))
        (node_dir / "env").write_text("".join(f"{k}={v}\n" for k, v in env.items()))
        for repo, revision, source in [] if docker else trees:
            copy_snapshot(node_dir, repo, revision, source)
    return host_keys


def copy_snapshot(owner_dir: Path, repo: str, revision: str, source: Path) -> None:
    """Copy a snapshot into `owner_dir/hf-cache` (a node's, or the real-Docker fleet's NAS), with
    the simulated engine's tokenizer as its own: a bench reads a lane's tokenizer from its
    snapshot on the node, simulated or not."""
    model_dir = owner_dir / "hf-cache" / "hub" / ("models--" + repo.replace("/", "--"))
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
    lane_images: list[LaneImage] | None = None,
) -> None:
    """clusters.toml (schema of the project's), known_hosts, ssh_config, recipes, fleet.json
    (which names the fleet's identity mode, see `cockpit_sim.fleet.namespaces`); with
    `lane_images` (real Docker) the recipes name those images and the caches are the NAS's."""
    recipes_dir = Path(config.recipes_dir)
    names = node_names(config.nodes)
    project = tomllib.loads((recipes_dir / "clusters.toml").read_text())
    defaults = dict(project.get("defaults", {}))
    real = lane_images is not None
    defaults.update(ssh_user=config.user, ssh_port=port)
    if real:  # one folder every node mounts at the same absolute path (a NAS)
        defaults.update(
            model_cache=str(layout.nas_dir / MODEL_CACHE),
            compile_cache=str(layout.nas_dir / COMPILE_CACHE),
        )
    ssh = dict(project.get("ssh", {}))
    ssh.update(known_hosts="known_hosts", identity_files=["client_key"])
    clusters = fitting_clusters(recipes_dir, names)
    document = {
        "defaults": defaults,
        "ssh": ssh,
        "nodes": {
            n: {
                "host": node_host(n, config.subnet),
                "port": port,
                "user": config.user,
                **(
                    {}
                    if real
                    else {  # every node's caches are its own folders: absolute, as docker needs
                        "model_cache": str(layout.node_dir(n) / MODEL_CACHE),
                        "compile_cache": str(layout.node_dir(n) / "home" / COMPILE_CACHE),
                    }
                ),
            }
            for n in names
        },
        "clusters": clusters,
    }
    header = (
        f"# Simulated fleet of {config.nodes} nodes on loopback, written by `cockpit sim up`.\n"
        + (
            "# A real Docker daemon per node; the caches: one folder all nodes mount (a NAS).\n\n"
            if real
            else "# Each node's model_cache and compile_cache are its own (absolute) folders.\n\n"
        )
    )
    (layout.root / "clusters.toml").write_text(header + tomli_w.dumps(document))
    known = "".join(
        f"[{node_host(n, config.subnet)}]:{port} {public_line(host_keys[n])}\n" for n in names
    )
    (layout.root / "known_hosts").write_text(known)
    (layout.ssh_dir / "known_hosts").write_text(known)
    built = {image.source_ref: image for image in lane_images or []}
    hosts = {n: node_host(n, config.subnet) for n in names}
    write_ssh_config(layout.root, hosts, port, config.user)
    for recipe in recipes_dir.glob("*.toml"):
        if recipe.name != "clusters.toml":
            text = fitted_recipe(recipe.read_text(), set(clusters))
            if text is None:
                continue
            image = built.get(tomllib.loads(text).get("image", {}).get("ref", ""))
            (layout.root / recipe.name).write_text(rewrite_recipe(text, image) if image else text)
    fleet = {
        "server": config.server,
        "docker": config.docker,
        "identity": identity,
        "user": config.user,
        "port": port,
        "speed": config.speed,
        "links": config.links,
        "nodes": {n: {"host": node_host(n, config.subnet), "port": port} for n in names},
    }
    layout.fleet_json.write_text(json.dumps(fleet, indent=1))
