"""Load an inventory folder (clusters.toml + recipes) into typed, validated objects."""

from __future__ import annotations

import difflib
import os
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs
from pydantic import BaseModel, ValidationError

from cockpit.assets import asset_dir
from cockpit.config.models import Cluster, ClustersFile, Node, Recipe, SshSettings
from cockpit.config.rules import check_nul, check_recipe
from cockpit.config.toml_source import TomlSource, read_toml
from cockpit.errors import InputError, Problem
from cockpit.redact import REDACTED, is_secret_name, remember

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

    def cluster(self, name: str) -> Cluster:
        try:
            return self.clusters[name]
        except KeyError:
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
    """--inventory / $COCKPIT_INVENTORY, else the user config's `inventory`, else recipes/."""
    if explicit is not None:
        return explicit.expanduser()
    from_env = os.environ.get("COCKPIT_INVENTORY")
    if from_env:
        return Path(from_env).expanduser()
    user_config = Path(platformdirs.user_config_dir("cockpit")) / "config.toml"
    if user_config.is_file():
        configured = read_toml(user_config).data.get("inventory")
        if isinstance(configured, str):
            return Path(configured).expanduser()
    return PROJECT_RECIPES


def _allowed_keys(model: type[BaseModel], loc: tuple[str | int, ...]) -> list[str]:
    """Field names of the model that holds the last element of loc."""
    current: Any = model
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        fields = getattr(current, "model_fields", None)
        if not fields or part not in fields:
            return []
        annotation = fields[part].annotation
        args = getattr(annotation, "__args__", ())
        candidates = [annotation, *args]
        nested = [c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)]
        if not nested:
            return []
        current = nested[0]
    return list(getattr(current, "model_fields", {}))


def pydantic_problems(
    src: TomlSource, model: type[BaseModel], error: ValidationError
) -> list[Problem]:
    """One problem per pydantic error, with the line of the key and the allowed keys."""
    problems = []
    for item in error.errors():
        loc = tuple(item["loc"])
        secret = any(is_secret_name(str(part)) for part in loc)
        got = REDACTED if secret else repr(item["input"])  # repr escapes control characters
        if item["type"] == "extra_forbidden":
            allowed = _allowed_keys(model, loc)
            close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"allowed: {', '.join(allowed)}"
            message = f"unknown key {loc[-1]!r} ({hint})"
        elif item["type"] == "missing":
            message = "required key is missing"
        elif item["type"] == "value_error":
            message = f"{item['ctx']['error']} (got {got})"
        elif item["type"] == "string_pattern_mismatch":
            message = f"{got} is not allowed here (must match {item['ctx']['pattern']})"
        else:
            message = f"{item['msg']} (got {got})"
        problems.append(src.problem(loc, message))
    return problems


def _named(data: dict[str, Any], section: str) -> dict[str, Any]:
    """Fill each entry's `name` from its table key (`[nodes.dgx1]` is node dgx1)."""
    entries = data.get(section)
    if not isinstance(entries, dict):
        return data
    named = {k: {**v, "name": k} if isinstance(v, dict) else v for k, v in entries.items()}
    return {**data, section: named}


def _load_clusters(root: Path) -> tuple[ClustersFile | None, TomlSource | None, list[Problem]]:
    path = root / CLUSTERS_FILE
    if not path.is_file():
        return (
            None,
            None,
            [Problem(str(path), None, "", "missing: the inventory needs clusters.toml")],
        )
    try:
        src = read_toml(path)
    except InputError as exc:
        return None, None, exc.problems
    if nul := check_nul(src):
        return None, src, nul
    data = _named(_named(src.data, "nodes"), "clusters")
    try:
        parsed = ClustersFile.model_validate(data)
    except ValidationError as exc:
        return None, src, pydantic_problems(src, ClustersFile, exc)
    problems = [
        src.problem(
            ("clusters", cname, "nodes"),
            f"unknown node {node!r} (known: {', '.join(parsed.nodes)})",
        )
        for cname, cluster in parsed.clusters.items()
        for node in cluster.nodes
        if node not in parsed.nodes
    ]
    return parsed, src, problems


def _load_recipe(
    path: Path, clusters: dict[str, Cluster] | None
) -> tuple[Recipe | None, list[Problem]]:
    try:
        src = read_toml(path)
    except InputError as exc:
        return None, exc.problems
    if nul := check_nul(src):
        return None, nul
    try:
        recipe = Recipe.model_validate(src.data)
    except ValidationError as exc:
        return None, pydantic_problems(src, Recipe, exc)
    problems = check_recipe(recipe, src, clusters)
    if recipe.lane.name != path.stem:
        problems.append(
            src.problem(
                ("lane", "name"),
                f"lane name {recipe.lane.name!r} must match the file name {path.stem!r}",
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
    """Load and validate every file; return what loaded and every problem found."""
    if not root.is_dir():
        return None, [Problem(str(root), None, "", "inventory folder does not exist")]
    clusters_file, _, problems = _load_clusters(root)
    clusters = clusters_file.clusters if clusters_file else None
    recipes: dict[str, Recipe] = {}
    sources: dict[str, Path] = {}
    for path in sorted(root.glob("*.toml")):
        if path.name == CLUSTERS_FILE:
            continue
        recipe, recipe_problems = _load_recipe(path, clusters)
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
    )
    return inventory, problems


def load_inventory(root: Path | None = None) -> Inventory:
    """The inventory, or an InputError listing every problem (exit code 2)."""
    inventory, problems = check_inventory(resolve_inventory_dir(root))
    if problems or inventory is None:
        raise InputError(problems)
    return inventory


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
