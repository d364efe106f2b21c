"""Preflight of a launch: facts from the nodes → every failed check at once, each with its fix.

Pure: the facts were gathered before (see `cockpit.ops.facts`); nothing here touches a node.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from cockpit.config.models import ModelFacts
from cockpit.ops.facts import NodeFacts, lanes_running, port_taken
from cockpit.plan import LanePlan
from cockpit.plan.memory_fit import FitError, FitUnknown, MemoryFit, estimate


@dataclass(frozen=True)
class CheckFailure:
    """One failed check: what is wrong, on which nodes, and what the operator can do."""

    check: str
    message: str
    fix: str
    nodes: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.message} — fix: {self.fix}"


def _nodes(names: list[str]) -> str:
    return ", ".join(names)


def _sha_problem(pin: str | None, got: str | None, label: str) -> str | None:
    if pin is None:
        return None
    if got is None:
        return f"{label} missing"
    if not got.startswith(pin.lower()):
        return f"{label} sha256 {got[:12]}… does not match the pin {pin}"
    return None


def check_reachable(facts: Mapping[str, NodeFacts]) -> list[CheckFailure]:
    return [
        CheckFailure(
            "reachable",
            f"{node} is unreachable: {fact.unreachable}",
            f"check that {node} is up and its sshd answers (`ssh {node} true`)",
            (node,),
        )
        for node, fact in facts.items()
        if not fact.reachable
    ]


def check_recipe_cluster(plan: LanePlan) -> list[CheckFailure]:
    recipe, cluster = plan.recipe, plan.cluster
    if cluster.name in recipe.lane.clusters:
        return []
    return [
        CheckFailure(
            "recipe",
            f"recipe {recipe.name} is not qualified for cluster {cluster.name} "
            f"(its clusters: {', '.join(recipe.lane.clusters)})",
            f"use --cluster {recipe.lane.clusters[0]}, or add {cluster.name} to [lane] clusters",
        )
    ]


def check_image(
    plan: LanePlan, facts: Mapping[str, NodeFacts], will_sync: bool
) -> list[CheckFailure]:
    """The image present by digest everywhere, and the same image id on every node."""
    image = plan.recipe.image
    reachable = {n: f for n, f in facts.items() if f.reachable}
    missing = [n for n, f in reachable.items() if not f.has_digest]
    failures = []
    if missing and not will_sync:
        failures.append(
            CheckFailure(
                "image",
                f"image {image.ref} is not present by digest on {_nodes(missing)}",
                f"cockpit sync-image --recipe {plan.recipe.name} --cluster {plan.cluster.name} "
                "(or launch with --sync-image)",
                tuple(missing),
            )
        )
    wrong = [n for n, f in reachable.items() if f.wrong_id]
    if wrong and not will_sync:
        failures.append(
            CheckFailure(
                "image",
                f"{image.ref} resolves to another image id than the recipe's {image.image_id} "
                f"on {_nodes(wrong)}",
                f"cockpit sync-image --recipe {plan.recipe.name} --cluster {plan.cluster.name} "
                "(removes the wrong image, then loads and verifies the pinned one)",
                tuple(wrong),
            )
        )
    return failures


def check_lanes(
    plan: LanePlan,
    facts: Mapping[str, NodeFacts],
    production_clusters: frozenset[str],
) -> list[CheckFailure]:
    """No other lane's running containers on these nodes; our own lane must not run already."""
    failures = []
    for lane, where in sorted(lanes_running(facts).items()):
        nodes = sorted(where)
        clusters = sorted({c for c in where.values() if c})
        on = f" (cluster {', '.join(clusters)})" if clusters else ""
        if lane == plan.recipe.name:
            failures.append(
                CheckFailure(
                    "lane",
                    f"lane {lane} already runs on {_nodes(nodes)}{on}",
                    f"cockpit stop --lane {lane} first",
                    tuple(nodes),
                )
            )
            continue
        prod = [c for c in clusters if c in production_clusters]
        what = f"production lane {lane}" if prod else f"lane {lane}"
        failures.append(
            CheckFailure(
                "lane",
                f"{what} runs on {_nodes(nodes)}{on}"
                + (": a production cluster must be down first" if prod else ""),
                f"cockpit switch --recipe {plan.recipe.name} --cluster {plan.cluster.name} "
                f"(stops {lane} and launches), or cockpit stop --lane {lane}",
                tuple(nodes),
            )
        )
    return failures


def snapshot_problems(model: ModelFacts, fact: NodeFacts) -> list[str]:
    """Why `fact`'s snapshot cannot serve `model` (empty: present and matching its pins): the
    one reading of the pins, for preflight and for `sync-model` alike."""
    if not fact.snapshot_present:
        return ["not in the model cache"]
    checks = (
        _sha_problem(model.config_sha256, fact.config_sha256, "config.json"),
        _sha_problem(model.index_sha256, fact.index_sha256, "index"),
    )
    return [p for p in checks if p]


def sync_model_fix(recipe: str, cluster: str, source: str) -> str:
    """The fix that copies the snapshot from a node of the cluster that holds it."""
    return f"cockpit sync-model --recipe {recipe} --cluster {cluster} (copies it from {source})"


def check_snapshot(
    plan: LanePlan, facts: Mapping[str, NodeFacts], will_sync: bool = False
) -> list[CheckFailure]:
    """Every reachable node's snapshot present and matching the pins; the fix is `sync-model`
    when another node of the cluster holds a matching one, a download otherwise. `will_sync`:
    no failure when one node holds it (`launch --sync-model` copies it first)."""
    model = plan.recipe.model
    problems = {n: snapshot_problems(model, f) for n, f in facts.items() if f.reachable}
    holders = [n for n, found in problems.items() if not found]
    if will_sync and holders:
        return []
    sync = sync_model_fix(plan.recipe.name, plan.cluster.name, holders[0]) if holders else ""
    failures = []
    absent = [n for n, f in facts.items() if f.reachable and not f.snapshot_present]
    if absent:
        failures.append(
            CheckFailure(
                "snapshot",
                f"model snapshot {model.repo}@{model.revision} is not in the model cache "
                f"on {_nodes(absent)}",
                sync
                or "download it into the cache (huggingface-cli download "
                f"{model.repo} --revision {model.revision}) or mount the shared cache",
                tuple(absent),
            )
        )
    for node, found in problems.items():
        if found and node not in absent:
            failures.append(
                CheckFailure(
                    "snapshot",
                    f"snapshot on {node}: {'; '.join(found)}",
                    sync or f"re-download {model.repo}@{model.revision} on {node}, or fix the pins",
                    (node,),
                )
            )
    return failures


def check_port(
    plan: LanePlan, facts: Mapping[str, NodeFacts], head_node: str, master_port: int | None
) -> list[CheckFailure]:
    """The head's serve port and rendezvous (master) port must be free (but of a lane that runs
    there: its ports are its own, and the lane is the one error check_lanes reports, with its
    fix; an orphaned lane read as three errors)."""
    fact = facts.get(head_node)
    if fact is None or not fact.reachable:
        return []
    if any(r.labels.get("cockpit.lane") for r in fact.running()):
        return []
    wanted = [("serve_port", plan.serve_port)]
    wanted += [("master_port", master_port)] if master_port else []
    return [
        CheckFailure(
            "port",
            f"port {port} ({key}) is already taken on {head_node} ({plan.head_addr})",
            f"stop what listens there (`ss -ltnp 'sport = :{port}'` on {head_node}) "
            f"or set another {key} for the cluster",
            (head_node,),
        )
        for key, port in wanted
        if port_taken(fact.listening, plan.head_addr, port)
    ]


def check_gpus(facts: Mapping[str, NodeFacts]) -> list[CheckFailure]:
    """GPU processes the cockpit's lanes do not explain (a lane's own are reported as lanes)."""
    failures = []
    for node, fact in facts.items():
        if not fact.reachable or not fact.gpu_apps:
            continue
        if any(r.labels.get("cockpit.lane") for r in fact.running()):
            continue  # a lane's own GPU use: reported by check_lanes, or about to be stopped
        apps = ", ".join(f"{a.process_name} (pid {a.pid})" for a in fact.gpu_apps)
        failures.append(
            CheckFailure(
                "gpu",
                f"GPU busy on {node}: {apps}",
                f"stop those processes on {node}; the cockpit did not start them",
                (node,),
            )
        )
    return failures


def lane_fit(plan: LanePlan, facts: Mapping[str, NodeFacts]) -> MemoryFit | FitUnknown:
    """The lane's memory fit from the first node in rank order (the head, unless it could not
    say) that answered with the snapshot's config.json and weights."""
    reasons = []
    for rank in plan.ranks:
        fact = facts.get(rank.node)
        if fact is None:
            continue
        if not fact.reachable:
            reasons.append(f"{rank.node} did not answer ({fact.unreachable})")
        elif not fact.model_config:
            reasons.append(f"no config.json in the snapshot on {rank.node}")
        elif fact.weights_bytes is None:
            reasons.append(f"no weights index nor safetensors in the snapshot on {rank.node}")
        else:
            return _estimate(plan, rank.node, fact.model_config, fact.weights_bytes)
    return FitUnknown("; ".join(reasons) or "no node was asked")


def _estimate(plan: LanePlan, node: str, text: str, weights: int) -> MemoryFit | FitUnknown:
    try:
        config = json.loads(text)
    except ValueError as exc:
        return FitUnknown(f"config.json on {node} is not JSON ({exc})")
    if not isinstance(config, dict):
        return FitUnknown(f"config.json on {node} is not a JSON object")
    try:
        return estimate(plan.recipe, config, weights)
    except FitError as exc:
        return FitUnknown(f"{exc} (read on {node})")


def check_memory(
    plan: LanePlan, facts: Mapping[str, NodeFacts], recipe_file: str | None = None
) -> list[CheckFailure]:
    """vLLM would refuse to start: no room for KV, or not for one request of max-model-len."""
    problem = lane_fit(plan, facts).problem()
    if problem is None:
        return []
    field, message, fix = problem
    where = recipe_file or f"{plan.recipe.name}.toml"
    return [CheckFailure("memory", f"{where}: {field}: {message}", fix)]


def preflight(
    plan: LanePlan,
    facts: Mapping[str, NodeFacts],
    *,
    production_clusters: frozenset[str] = frozenset(),
    will_sync: bool = False,
    will_sync_model: bool = False,
    master_port: int | None = None,
    recipe_file: str | None = None,
) -> list[CheckFailure]:
    """Every failed check for launching `plan`, given the facts of its nodes.

    `will_sync`: a missing image is not a failure (it will be synced first); `will_sync_model`:
    nor is a missing or mismatched snapshot another node holds (it will be copied);
    `master_port`: the rendezvous port the head binds (checked with the serve port);
    `recipe_file`: the recipe's path, named by a memory refusal (default: `<lane>.toml`).
    """
    head = plan.ranks[0].node
    return [
        *check_recipe_cluster(plan),
        *check_reachable(facts),
        *check_image(plan, facts, will_sync),
        *check_lanes(plan, facts, production_clusters),
        *check_snapshot(plan, facts, will_sync_model),
        *check_port(plan, facts, head, master_port),
        *check_gpus(facts),
        *check_memory(plan, facts, recipe_file),
    ]
