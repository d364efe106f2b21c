"""Recipe × cluster → the exact `docker run` command of every rank (pure: no I/O)."""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from dataclasses import dataclass
from typing import Any

from cockpit.config.inventory import Inventory
from cockpit.config.models import Cluster, Recipe, ServeContract
from cockpit.config.rules import cluster_size_problem
from cockpit.errors import InputError

LABEL_LANE = "cockpit.lane"
LABEL_CLUSTER = "cockpit.cluster"
LABEL_RANK = "cockpit.rank"
LABEL_RECIPE_HASH = "cockpit.recipe-hash"
SECRET_KEY = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|CREDENTIAL", re.IGNORECASE)
REDACTED = "<redacted>"


@dataclass(frozen=True)
class RankCommand:
    """What starts one rank: the node it runs on and the argv sent to its shell."""

    node: str
    rank: int
    container: str
    argv: tuple[str, ...]

    @property
    def shell(self) -> str:
        """The argv as one shell-safe command line (every word quoted as needed)."""
        return shlex.join(self.argv)

    @property
    def is_head(self) -> bool:
        return self.rank == 0


@dataclass(frozen=True)
class LanePlan:
    """A lane placed on a cluster: its ranks in rank order, head first."""

    recipe: Recipe
    cluster: Cluster
    ranks: tuple[RankCommand, ...]
    head_addr: str
    serve_port: int
    recipe_hash: str

    @property
    def endpoint(self) -> str:
        return f"http://{self.head_addr}:{self.serve_port}"

    @property
    def launch_order(self) -> tuple[RankCommand, ...]:
        """Workers first, the head last (the mp backend's common practice)."""
        return (*self.ranks[1:], self.ranks[0])


def recipe_hash(recipe: Recipe) -> str:
    """A short stable hash of the recipe's content, recorded on containers and reports."""
    canonical = json.dumps(recipe.model_dump(mode="json"), sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def container_name(recipe: Recipe, rank: int) -> str:
    return f"cockpit-{recipe.name}-r{rank}"


def _flag_value(value: Any) -> str:
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _fill(value: Any, model_path: str) -> Any:
    """Substitute `{model_path}` inside string values of a JSON-like config."""
    if isinstance(value, str):
        return value.replace("{model_path}", model_path)
    if isinstance(value, dict):
        return {k: _fill(v, model_path) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, model_path) for v in value]
    return value


def serve_flags(serve: ServeContract, model_path: str) -> list[str]:
    """The vLLM flags of the serve contract, in a stable order."""
    flags = [
        "--served-model-name", serve.served_model_name,
        "--max-model-len", str(serve.max_model_len),
        "--max-num-seqs", str(serve.max_num_seqs),
        "--max-num-batched-tokens", str(serve.max_num_batched_tokens),
        "--gpu-memory-utilization", str(serve.gpu_memory_utilization),
        "--kv-cache-dtype", serve.kv_cache_dtype,
    ]  # fmt: skip
    flags.append(
        "--enable-prefix-caching" if serve.enable_prefix_caching else "--no-enable-prefix-caching"
    )
    if serve.trust_remote_code:
        flags.append("--trust-remote-code")
    if serve.enable_flashinfer_autotune is not None:
        flags.append(
            "--enable-flashinfer-autotune"
            if serve.enable_flashinfer_autotune
            else "--no-enable-flashinfer-autotune"
        )
    for name in (
        "speculative_config",
        "model_loader_extra_config",
        "compilation_config",
        "kernel_config",
        "hf_overrides",
    ):
        value = getattr(serve, name)
        if value is not None:
            flags += ["--" + name.replace("_", "-"), _flag_value(_fill(value, model_path))]
    for name, value in serve.extra_args.items():
        if value is True:
            flags.append(f"--{name}")
        elif value is False:
            flags.append(f"--no-{name}")
        else:
            flags += [f"--{name}", _flag_value(_fill(value, model_path))]
    return flags


def lane_env(recipe: Recipe, cluster: Cluster, node_addr: str) -> dict[str, str]:
    """Every env var of a rank: the recipe's, the cluster's [nccl] block, the node's address."""
    return {**recipe.env, **cluster.nccl.to_env(), "VLLM_HOST_IP": node_addr}


def plan_lane(inventory: Inventory, recipe: Recipe, cluster: Cluster) -> LanePlan:
    """Place a recipe on a cluster; refuses a cluster of the wrong size (exit code 2)."""
    problem = cluster_size_problem(recipe, cluster)
    if problem:
        raise InputError(f"{recipe.name} on {cluster.name}: {problem}")
    nodes = [inventory.nodes[name] for name in cluster.nodes]
    head_addr = nodes[0].service_addr
    port = inventory.serve_port_of(cluster)
    master_port = inventory.master_port_of(cluster)
    container_cache = inventory.container_model_cache
    model_path = recipe.model.snapshot_path(container_cache)
    digest = recipe_hash(recipe)
    tp = recipe.lane.tensor_parallel_size
    ranks = []
    for rank, node in enumerate(nodes):
        name = container_name(recipe, rank)
        argv = [
            "docker", "run", "-d",
            "--name", name,
            "--gpus", "all",
            "--network", "host",
            "--ipc", "host",
            "--shm-size", "32g",
            "--ulimit", "memlock=-1",
            "--label", f"{LABEL_LANE}={recipe.name}",
            "--label", f"{LABEL_CLUSTER}={cluster.name}",
            "--label", f"{LABEL_RANK}={rank}",
            "--label", f"{LABEL_RECIPE_HASH}={digest}",
            "-v", f"{inventory.model_cache_of(cluster, node.name)}:{container_cache}:ro",
            "-v", f"{inventory.compile_cache_of(node.name)}/{recipe.model.cache_namespace}"
                  ":/root/.cache/vllm",
        ]  # fmt: skip
        for key, value in lane_env(recipe, cluster, node.service_addr).items():
            argv += ["-e", f"{key}={value}"]
        argv.append(recipe.image.ref)
        argv += recipe.launcher.command
        argv.append(model_path)
        argv += [
            "--tensor-parallel-size", str(tp),
            "--nnodes", str(len(nodes)),
            "--node-rank", str(rank),
            "--master-addr", head_addr,
            "--master-port", str(master_port),
        ]  # fmt: skip
        if rank > 0 and recipe.launcher.headless_workers:
            argv.append("--headless")
        argv += ["--host", node.service_addr, "--port", str(port)]
        argv += serve_flags(recipe.serve, model_path)
        ranks.append(RankCommand(node.name, rank, name, tuple(argv)))
    return LanePlan(recipe, cluster, tuple(ranks), head_addr, port, digest)


def redact_argv(argv: tuple[str, ...]) -> tuple[str, ...]:
    """Hide secret env values (`-e HF_TOKEN=…`) for display; the real argv keeps them."""
    out = list(argv)
    for i, word in enumerate(out[:-1]):
        if word == "-e":
            key, _, _ = out[i + 1].partition("=")
            if SECRET_KEY.search(key):
                out[i + 1] = f"{key}={REDACTED}"
    return tuple(out)
