"""clusters.toml table by table: a mistake in one cluster's (or node's) table breaks that cluster.

One typo in `[clusters.2nodes-dac]` made every command refuse the whole fleet, and cascaded
(an unknown key, the key it misspells now missing, the recipes that name the cluster). Here each
`[nodes.*]` and `[clusters.*]` table is checked on its own; the ones that fail are left out, with
one problem per mistake and the clusters it leaves unusable (`Breakage`). A mistake outside them
(TOML syntax, `[defaults]`, `[ssh]`) still breaks the whole file.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field, replace
from itertools import combinations
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from cockpit.config.models import ClustersFile
from cockpit.config.problems import pydantic_problems
from cockpit.config.rules import check_nul
from cockpit.config.toml_source import TomlSource, read_toml
from cockpit.errors import InputError, Problem

SECTIONS = ("nodes", "clusters")


@dataclass(frozen=True)
class Breakage:
    """One mistake inside the tables of nodes or clusters, and the clusters it takes out."""

    problem: Problem
    clusters: tuple[str, ...] = ()
    node: str = ""  # set when the mistake is in this node's own table
    nodes: tuple[str, ...] | None = ()  # the nodes it may hold, as written (None: not readable)

    def __str__(self) -> str:
        if not self.clusters:
            who = f"node {self.node}"
        elif len(self.clusters) == 1:
            who = f"cluster {self.clusters[0]}"
        else:
            who = f"clusters {', '.join(self.clusters)}"
        return f"{who}: broken: {self.problem}"

    def left_out(self) -> str:
        """What a command that loaded the inventory partially says of it (`cli.usable`)."""
        return f"{self}; left out, the rest of the fleet is usable"


@dataclass(frozen=True)
class ClustersLoad:
    """What clusters.toml gave: its usable part (None when the file itself is broken), the
    problems outside any node or cluster, and the breakages inside them."""

    parsed: ClustersFile | None
    problems: list[Problem] = field(default_factory=list)
    broken: list[Breakage] = field(default_factory=list)

    @property
    def broken_clusters(self) -> frozenset[str]:
        """Every cluster name that did not load (a recipe naming one is not blamed for it)."""
        return frozenset(c for b in self.broken for c in b.clusters)


def _model_problems(src: TomlSource, data: dict[str, Any]) -> list[Problem]:
    try:
        ClustersFile.model_validate(data)
    except ValidationError as exc:
        return pydantic_problems(src, ClustersFile, exc)
    return []


def _entry_problems(src: TomlSource, section: str, name: str, value: Any) -> list[Problem]:
    """The problems of one `[nodes.NAME]` or `[clusters.NAME]` table, checked alone."""
    alone = {"nodes": {}, "clusters": {}, section: {name: value}}
    return check_nul(src, value, (section, name)) or _model_problems(src, alone)


def _first_line(src: TomlSource, prefix: tuple[str, ...]) -> int | None:
    lines = [n for loc, n in src.lines.items() if loc[: len(prefix)] == prefix]
    return min(lines) if lines else None


def _split_tables(
    src: TomlSource, bad: dict[str, list[Problem]], tables: dict[str, Any]
) -> list[Breakage]:
    """Two broken clusters with near names whose keys complete each other: one typo in a table
    name (`[clusters.2nodes-dca.nccl]` under `[clusters.2nodes-dac]`), said once."""
    found = []
    for a, b in combinations(sorted(bad), 2):
        one, other = tables[a], tables[b]
        if a not in bad or b not in bad or difflib.SequenceMatcher(None, a, b).ratio() < 0.6:
            continue  # one of them paired already, or names too far apart for a typo
        if not (isinstance(one, dict) and isinstance(other, dict)) or one.keys() & other.keys():
            continue
        if _entry_problems(src, "clusters", a, {**one, **other}):
            continue  # together they are no valid cluster either
        first, second = sorted((a, b), key=lambda n: _first_line(src, ("clusters", n)) or 0)
        where = f"[clusters.{second}…] (line {_first_line(src, ('clusters', second))})"
        problem = src.problem(
            ("clusters", first),
            f"{where} looks like this cluster's table with a typo in its name: "
            "give both tables one name",
        )
        found.append(Breakage(problem, tuple(sorted((a, b)))))
        del bad[a], bad[b]
    return found


def _unknown_nodes(
    src: TomlSource, clusters: dict[str, Any], known: list[str], broken_nodes: set[str]
) -> tuple[list[Breakage], dict[str, list[str]]]:
    """Clusters naming a node that is not defined, one problem per name however many clusters
    name it; and the clusters each broken node takes down (its own problems say why: so does a
    broken node no cluster names whose name is near, `[nodes.Dgx8]` for dgx8)."""
    named = {n for table in clusters.values() for n in table["nodes"]}
    unnamed = sorted(broken_nodes - named)
    naming: dict[str, list[str]] = {}
    taken_down: dict[str, list[str]] = {}
    for cname, table in clusters.items():
        for node in table["nodes"]:
            if node in known:
                continue
            near = [node] if node in broken_nodes else difflib.get_close_matches(node, unnamed, 1)
            if near:
                taken_down.setdefault(near[0], []).append(cname)
            else:
                naming.setdefault(node, []).append(cname)
    found = []
    for node, names in naming.items():
        close = difflib.get_close_matches(node, known, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(known)}"
        also = f"; named by {', '.join(names[1:])} too" if len(names) > 1 else ""
        problem = src.problem(
            ("clusters", names[0], "nodes"), f"unknown node {node!r} ({hint}){also}"
        )
        found.append(Breakage(problem, tuple(names)))
    return found, taken_down


def _with_nodes(breakage: Breakage, raw: dict[str, Any]) -> Breakage:
    """The breakage with the nodes its clusters name as written: an operation elsewhere must
    spare them (a broken table's production flag cannot be trusted). None when they cannot be
    read: a `nodes` that is not a list of names, or none at all (a misspelt key, perhaps); of a
    table split in two by a typo in its name, the half that has them."""
    nodes = {breakage.node} if breakage.node else set()
    found = bool(breakage.node)
    for name in breakage.clusters:
        table = raw.get(name)
        listed = table.get("nodes") if isinstance(table, dict) else None
        if listed is None:
            continue
        if not isinstance(listed, list) or not all(isinstance(n, str) for n in listed):
            return replace(breakage, nodes=None)
        nodes.update(listed)
        found = True
    return replace(breakage, nodes=tuple(sorted(nodes)) if found else None)


def load_clusters(path: Path) -> ClustersLoad:
    """clusters.toml with each node and cluster table checked on its own."""
    if not path.is_file():
        return ClustersLoad(
            None, [Problem(str(path), None, "", "missing: the inventory needs clusters.toml")]
        )
    try:
        src = read_toml(path)
    except InputError as exc:
        return ClustersLoad(None, exc.problems)
    data = src.data
    tables = {s: data[s] for s in SECTIONS if isinstance(data.get(s), dict)}
    outside = {**data, **{s: {} for s in tables}}
    problems = check_nul(src, outside) or _model_problems(src, outside)
    good: dict[str, dict[str, Any]] = {s: {} for s in SECTIONS}
    bad: dict[str, dict[str, list[Problem]]] = {s: {} for s in SECTIONS}
    for section, entries in tables.items():
        for name, value in entries.items():
            if entry := _entry_problems(src, section, name, value):
                bad[section][name] = entry
            else:
                good[section][name] = value
    broken = _split_tables(src, bad["clusters"], tables.get("clusters", {}))
    broken += [Breakage(p, (name,)) for name, ps in bad["clusters"].items() for p in ps]
    unknown, taken_down = _unknown_nodes(
        src, good["clusters"], list(good["nodes"]), set(bad["nodes"])
    )
    broken += unknown
    broken += [
        Breakage(p, tuple(taken_down.get(name, ())), node=name)
        for name, ps in bad["nodes"].items()
        for p in ps
    ]
    raw = tables.get("clusters", {})
    broken = sorted((_with_nodes(b, raw) for b in broken), key=lambda b: b.problem.line or 0)
    if problems:  # the file itself is broken: its tables' problems are listed all the same
        return ClustersLoad(None, problems, broken)
    out = {c for b in broken for c in b.clusters}
    usable = {name: table for name, table in good["clusters"].items() if name not in out}
    parsed = ClustersFile.model_validate({**data, "nodes": good["nodes"], "clusters": usable})
    named = parsed.model_copy(
        update={
            "nodes": {k: v.model_copy(update={"name": k}) for k, v in parsed.nodes.items()},
            "clusters": {k: v.model_copy(update={"name": k}) for k, v in parsed.clusters.items()},
        }
    )
    return ClustersLoad(named, [], broken)
