"""Recipe × cluster → the exact `docker run` command of every rank (pure: no I/O).

A rank's environment never stands on a command line (where `ps` on the node shows it to every
user): `start_line` writes it to a file of mode 0600 on the node from the SSH channel's stdin,
runs `docker run --env-file FILE …`, and removes the file once docker returns, also on failure.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from dataclasses import dataclass
from typing import Any

from cockpit.api_key import lane_api_key
from cockpit.config.inventory import Inventory
from cockpit.config.models import Cluster, Recipe, ServeContract
from cockpit.config.rules import cluster_size_problem
from cockpit.errors import InputError
from cockpit.printable import shell_word
from cockpit.redact import redact_argv, redact_env

LABEL_LANE = "cockpit.lane"
LABEL_CLUSTER = "cockpit.cluster"
LABEL_RANK = "cockpit.rank"
LABEL_RECIPE_HASH = "cockpit.recipe-hash"
ENV_FILE = "$COCKPIT_ENV_FILE"
"""The argv word that stands for the env file's path; the start line sets the variable."""
ENV_DIR = "$HOME/.cockpit/env"
ENV_FILE_MAX_AGE_MIN = 10
"""An env file older than this is a leftover (the node crashed mid-start): the next start on the
node removes it. A start takes at most a minute (`ops.launch.START_TIMEOUT_S`)."""


@dataclass(frozen=True)
class RankCommand:
    """What starts one rank: the node it runs on and the argv sent to its shell."""

    node: str
    rank: int
    container: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()

    @property
    def shell(self) -> str:
        """The argv as one shell-safe command line (every word quoted as needed; the env file
        word is the variable `start_line` sets)."""
        return " ".join(
            f'"{ENV_FILE}"' if word == ENV_FILE else shlex.quote(word) for word in self.argv
        )

    @property
    def env_file(self) -> str:
        """The env file's content, in the format of `docker run --env-file` (KEY=VALUE lines,
        no quoting: validation refuses values with a line break)."""
        return "".join(f"{key}={value}\n" for key, value in self.env)

    @property
    def start_line(self) -> str:
        """The remote command that starts the rank; send `env_file` as its stdin.

        umask 077 makes the folder 0700 and the file 0600; the EXIT trap removes the file when
        the shell ends (docker run read it and returned, or failed), and the signal traps turn a
        TERM, HUP, INT or PIPE into that exit. Files older than ENV_FILE_MAX_AGE_MIN (a start
        cut by a node crash) are removed first."""
        folder = f'"{ENV_DIR}"'
        template = shlex.quote(f"{self.container}.env.XXXXXX")
        return (
            f"umask 077 && mkdir -p -- {folder} && "
            f"{{ find {folder} -maxdepth 1 -type f -name '*.env.*' "
            f"-mmin +{ENV_FILE_MAX_AGE_MIN} -delete 2>/dev/null; true; }} && "
            f"COCKPIT_ENV_FILE=$(mktemp -- {folder}/{template}) && "
            f"trap 'rm -f -- \"$COCKPIT_ENV_FILE\"' EXIT && "
            "trap 'exit 129' HUP && trap 'exit 130' INT && trap 'exit 141' PIPE && "
            "trap 'exit 143' TERM && "
            f'cat > "{ENV_FILE}" && {self.shell}'
        )

    def display(self, reveal_secrets: bool = False) -> str:
        """The command as an operator may see it: secrets redacted (unless revealed), control
        and bidi characters escaped (bash `$'…'` quoting, the same value in bash)."""
        words = self.argv if reveal_secrets else redact_argv(self.argv)
        return " ".join(f'"{ENV_FILE}"' if w == ENV_FILE else shell_word(w) for w in words)

    @property
    def display_env(self) -> dict[str, str]:
        return redact_env(dict(self.env))

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
    def api_key(self) -> str | None:
        """The key the lane's engine requires of `/v1/*` requests (its env's VLLM_API_KEY)."""
        return lane_api_key(self.recipe.env)

    @property
    def launch_order(self) -> tuple[RankCommand, ...]:
        """Workers first, the head last (the mp backend's common practice)."""
        return (*self.ranks[1:], self.ranks[0])


def recipe_hash(recipe: Recipe) -> str:
    """A short stable hash of the recipe's content, recorded on containers and reports.

    Fields left at their defaults are not hashed: a new optional field in the schema must not
    change the hash of every recipe (reports find their baseline by it)."""
    canonical = json.dumps(recipe.model_dump(mode="json", exclude_defaults=True), sort_keys=True)
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
            "--pull", "never",  # never an implicit registry fetch at launch: sync re-attaches
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
        argv += ["--env-file", ENV_FILE, recipe.image.ref]
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
        env = tuple(lane_env(recipe, cluster, node.service_addr).items())
        ranks.append(RankCommand(node.name, rank, name, tuple(argv), env))
    return LanePlan(recipe, cluster, tuple(ranks), head_addr, port, digest)
