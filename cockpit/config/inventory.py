"""Load an inventory folder (clusters.toml + recipes) into typed, validated objects."""

from __future__ import annotations

import difflib
import os
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from cockpit.assets import asset_dir
from cockpit.config.clusters import Breakage, load_clusters
from cockpit.config.models import Cluster, Node, Recipe, SshSettings
from cockpit.config.problems import pydantic_problems
from cockpit.config.rules import check_nul, check_recipe
from cockpit.config.toml_source import Loc, TomlSource, read_toml
from cockpit.errors import InputError, Problem
from cockpit.redact import is_secret_name, remember

CLUSTERS_FILE = "clusters.toml"
PROJECT_RECIPES = asset_dir("recipes")


@dataclass(frozen=True)
class Inventory:
    """The fleet and its lanes, as loaded from one folder."""

    root: Path
    nodes: dict[str, Node]
    clusters: dict[str, Cluster]
    recipes: dict[str, Recipe]
    ssh: SshSettings
    serve_port: int
    master_port: int
    model_cache: str
    container_model_cache: str
    compile_cache: str
    sources: dict[str, Path] = field(default_factory=dict)
    broken: tuple[Breakage, ...] = ()  # clusters (and nodes) left out, when loaded `partial`

    def path(self, relative: str | None) -> Path | None:
        """A path from the inventory, relative to its folder (~ expanded)."""
        if relative is None:
            return None
        candidate = Path(relative).expanduser()
        return candidate if candidate.is_absolute() else self.root / candidate

    def recipe(self, name: str) -> Recipe:
        try:
            return self.recipes[name]
        except KeyError:
            raise InputError(_unknown("recipe", name, self.recipes)) from None

    def clusters_of(self, recipe: Recipe) -> tuple[str, ...]:
        """The recipe's clusters that loaded (a broken one is left out, `load_inventory`)."""
        return tuple(c for c in recipe.lane.clusters if c in self.clusters)

    def operable(self, name: str) -> Cluster:
        """The cluster an operation may change: one that shares no node with a broken cluster
        (whose production flag and lanes cannot be trusted), as far as its table says."""
        cluster = self.cluster(name)
        for breakage in self.broken:
            if breakage.nodes is None:
                raise InputError(
                    f"{breakage}; its nodes cannot be read, so no operation can be sure to "
                    "spare them: fix it first"
                )
            shared = sorted(set(cluster.nodes) & set(breakage.nodes))
            if shared:
                raise InputError(
                    f"cluster {name!r} shares {', '.join(shared)} with {breakage}; "
                    "fix it first (a lane there, perhaps a production one, is not known)"
                )
        return cluster

    def cluster(self, name: str) -> Cluster:
        try:
            return self.clusters[name]
        except KeyError:
            broken = [b.problem for b in self.broken if name in b.clusters]
            if broken:
                raise InputError(f"cluster {name!r} is broken: {broken[0]}") from None
            raise InputError(_unknown("cluster", name, self.clusters)) from None

    def serve_port_of(self, cluster: Cluster) -> int:
        return cluster.serve_port or self.serve_port

    def master_port_of(self, cluster: Cluster) -> int:
        return cluster.master_port or self.master_port

    def model_cache_of(self, cluster: Cluster, node: str | None = None) -> str:
        """The model cache on `node` (its own, else the cluster's, else the default)."""
        own = self.nodes[node].model_cache if node in self.nodes else None
        return own or cluster.model_cache or self.model_cache

    def model_caches(self, cluster: Cluster) -> dict[str, str]:
        """Node → model cache, for the cluster's nodes."""
        return {n: self.model_cache_of(cluster, n) for n in cluster.nodes}

    def compile_cache_of(self, node: str) -> str:
        own = self.nodes[node].compile_cache if node in self.nodes else None
        return own or self.compile_cache


def _unknown(kind: str, name: str, known: dict[str, Any]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(sorted(known))})"
    return f"unknown {kind} {name!r}{hint}"


def resolve_inventory_dir(explicit: Path | None) -> Path:
    """--inventory, else $COCKPIT_INVENTORY, else the user config's `inventory`, else recipes/;
    a mistake in `config.toml` is an InputError (file, line, field)."""
    if explicit is not None:
        return explicit.expanduser()
    from cockpit.settings import user_config  # pydantic-settings: not for an --inventory run

    configured = user_config().inventory  # the variable wins over the file
    return Path(configured).expanduser() if configured else PROJECT_RECIPES


def _load_recipe(
    path: Path, clusters: dict[str, Cluster] | None, broken: frozenset[str]
) -> tuple[Recipe | None, list[Problem]]:
    try:
        src = read_toml(path)
    except InputError as exc:
        return None, exc.problems
    return validate_recipe(src, clusters, broken)


def validate_recipe(
    src: TomlSource, clusters: dict[str, Cluster] | None, broken: frozenset[str] = frozenset()
) -> tuple[Recipe | None, list[Problem]]:
    """Every check a recipe file gets, on parsed TOML: `recipe import` runs a recipe it has not
    written yet through the same checks, so what it writes loads."""
    if nul := check_nul(src):
        return None, nul
    try:
        recipe = Recipe.model_validate(src.data)
    except ValidationError as exc:
        return None, pydantic_problems(src, Recipe, exc)
    problems = check_recipe(recipe, src, clusters, broken)
    if recipe.lane.name != src.path.stem:
        problems.append(
            src.problem(
                ("lane", "name"),
                f"lane name {recipe.lane.name!r} must match the file name {src.path.stem!r}",
            )
        )
    return (None if problems else recipe), problems


def secret_values(recipes: Iterable[Recipe], clusters: Iterable[Cluster]) -> list[str]:
    """The values of secret-named env keys and serve flags: the redactor hides them wherever
    they appear (an engine may echo them in its log)."""
    values = [v for c in clusters for k, v in c.nccl.env.items() if is_secret_name(k)]
    for recipe in recipes:
        values += [v for k, v in recipe.env.items() if is_secret_name(k)]
        values += [
            str(v)
            for k, v in recipe.serve.extra_args.items()
            if is_secret_name(k) and not isinstance(v, bool)
        ]
    return values


def check_inventory(root: Path) -> tuple[Inventory | None, list[Problem]]:
    """Load and validate every file; return what loaded and every problem found (a broken
    cluster's too: the inventory leaves it out and lists it in `broken`)."""
    if not root.is_dir():
        return None, [Problem(str(root), None, "", "inventory folder does not exist")]
    loaded = load_clusters(root / CLUSTERS_FILE)
    clusters_file = loaded.parsed
    problems = [*loaded.problems, *(b.problem for b in loaded.broken)]
    clusters = clusters_file.clusters if clusters_file else None
    recipes: dict[str, Recipe] = {}
    sources: dict[str, Path] = {}
    for path in sorted(root.glob("*.toml")):
        if path.name == CLUSTERS_FILE:
            continue
        recipe, recipe_problems = _load_recipe(path, clusters, loaded.broken_clusters)
        problems.extend(recipe_problems)
        if recipe is not None:
            recipes[recipe.name] = recipe
            sources[recipe.name] = path
    remember(secret_values(recipes.values(), (clusters or {}).values()))
    if clusters_file is None or clusters is None:
        return None, problems
    defaults = clusters_file.defaults
    nodes = {
        name: node.model_copy(
            update={"port": node.port or defaults.ssh_port, "user": node.user or defaults.ssh_user}
        )
        for name, node in clusters_file.nodes.items()
    }
    inventory = Inventory(
        root=root,
        nodes=nodes,
        clusters=clusters,
        recipes=recipes,
        ssh=clusters_file.ssh,
        serve_port=defaults.serve_port,
        master_port=defaults.master_port,
        model_cache=defaults.model_cache,
        container_model_cache=defaults.container_model_cache,
        compile_cache=defaults.compile_cache,
        sources=sources,
        broken=tuple(loaded.broken),
    )
    return inventory, problems


def load_inventory(root: Path | None = None, *, partial: bool = False) -> Inventory:
    """The inventory, or an InputError listing every problem (exit code 2).

    `partial`: a problem inside one cluster's (or node's) table leaves that cluster out (listed
    in `broken`) instead of refusing the fleet; for commands that only look (`status`)."""
    inventory, problems = check_inventory(resolve_inventory_dir(root))
    if partial and inventory is not None:
        inside = {b.problem for b in inventory.broken}
        problems = [p for p in problems if p not in inside]
    if problems or inventory is None:
        raise InputError(problems)
    return inventory


def ssh_file_problems(inventory: Inventory) -> list[Problem]:
    """Every identity file and the ssh config file the inventory names that cannot be read,
    each at its line (without this, `status` said a bare "no such file or directory")."""
    ssh = inventory.ssh
    named: list[tuple[Loc, str]] = [
        (("ssh", "identity_files", i), written) for i, written in enumerate(ssh.identity_files)
    ]
    if ssh.config_file is not None:
        named.append((("ssh", "config_file"), ssh.config_file))
    problems = []
    for loc, written in named:
        path = inventory.path(written)
        if path is None or (path.is_file() and os.access(path, os.R_OK)):
            continue
        why = (
            "is a folder"
            if path.is_dir()
            else "is not readable"
            if path.exists()
            else "does not exist"
        )
        message = f"{path} {why}"
        source = inventory.root / CLUSTERS_FILE
        try:
            problems.append(read_toml(source).problem(loc, message))
        except InputError:
            problems.append(Problem(str(source), None, ".".join(map(str, loc)), message))
    return problems


def known_hosts_problem(inventory: Inventory, nodes: Iterable[str] | None = None) -> Problem | None:
    """A configured known_hosts file that cannot be read, with the command that creates it.

    Without this, every node fails with asyncssh's bare "no such file or directory"."""
    known = inventory.path(inventory.ssh.known_hosts)
    if known is None or (known.is_file() and os.access(known, os.R_OK)):
        return None
    why = "is not readable" if known.exists() else "does not exist"
    by_port: dict[int, list[str]] = {}
    for name in nodes if nodes is not None else inventory.nodes:
        node = inventory.nodes[name]
        by_port.setdefault(node.port or 22, []).append(node.host)
    scans = " && ".join(
        shlex.join(["ssh-keyscan", *(["-p", str(port)] if port != 22 else []), *hosts])
        + f" >> {shlex.quote(str(known))}"
        for port, hosts in by_port.items()
    )
    message = (
        f"known_hosts file {known} {why}: after checking the nodes are the right machines, "
        f"record their host keys with: {scans} (or point [ssh] known_hosts at your file)"
    )
    path = inventory.root / CLUSTERS_FILE
    try:
        return read_toml(path).problem(("ssh", "known_hosts"), message)
    except InputError:
        return Problem(str(path), None, "ssh.known_hosts", message)
