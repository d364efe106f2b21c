"""Cross-field checks born of the seed's own failures; each yields problems, never raises."""

from __future__ import annotations

from collections.abc import Iterator

from cockpit.api_key import API_KEY_ENV
from cockpit.config.models import (
    Cluster,
    DeviationAction,
    DeviationKind,
    Recipe,
    ServeContract,
    is_digest_ref,
)
from cockpit.config.toml_source import TomlSource
from cockpit.errors import Problem

NCCL_BLOCK_KEYS = frozenset(
    {"NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"}
)
# Flags the cockpit renders itself: a recipe must not smuggle them in through extra_args.
RENDERED_FLAGS = frozenset(
    {
        "tensor-parallel-size",
        "nnodes",
        "node-rank",
        "master-addr",
        "master-port",
        "headless",
        "host",
        "port",
        "model",
    }
)
API_KEY_FLAG = "api-key"
"""vLLM's key flag: refused, the key goes in the env as API_KEY_ENV (`cockpit.api_key`)."""


def check_nul(
    src: TomlSource, value: object = None, at: tuple[str | int, ...] = ()
) -> list[Problem]:
    """A NUL in any string (of the file, or of `value` standing at `at` in it): no command line
    or env file can carry one (exec cuts the word)."""

    def walk(value: object, loc: tuple[str | int, ...]) -> Iterator[Problem]:
        if isinstance(value, str) and "\x00" in value:
            yield src.problem(loc, "holds a NUL character (\\x00), which no command can carry")
        elif isinstance(value, dict):
            for key, item in value.items():
                yield from walk(item, (*loc, key))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                yield from walk(item, (*loc, index))

    return list(walk(src.data if value is None else value, at))


def valid_tp_sizes(heads: int, kv_heads: int, limit: int = 64) -> list[int]:
    return [tp for tp in range(1, limit + 1) if heads % tp == 0 and kv_heads % tp == 0]


def check_tensor_parallel(recipe: Recipe, src: TomlSource) -> Iterator[Problem]:
    """vLLM's divide() rejects a TP size that does not split both head counts (seed §4: TP6)."""
    tp = recipe.lane.tensor_parallel_size
    heads, kv = recipe.model.num_attention_heads, recipe.model.num_kv_heads
    if heads % tp or kv % tp:
        allowed = ", ".join(str(n) for n in valid_tp_sizes(heads, kv))
        yield src.problem(
            ("lane", "nodes"),
            f"tensor parallel size {tp} does not divide {heads} attention heads / {kv} KV heads "
            f"(vLLM's divide() rejects it at engine build; zero-padding KV heads costs quality); "
            f"use TP in {{{allowed}}}",
        )


def check_clusters(
    recipe: Recipe, src: TomlSource, clusters: dict[str, Cluster], broken: frozenset[str]
) -> Iterator[Problem]:
    """Every cluster the lane names exists and has its node count; a cluster of clusters.toml
    that is broken is not blamed on the recipe (its own problem says why)."""
    for index, name in enumerate(recipe.lane.clusters):
        if name in broken:
            continue
        cluster = clusters.get(name)
        if cluster is None:
            known = ", ".join(sorted(clusters)) or "none"
            yield src.problem(("lane", "clusters"), f"unknown cluster {name!r} (known: {known})")
            continue
        problem = cluster_size_problem(recipe, cluster)
        if problem:
            yield src.problem(("lane", "clusters"), f"{problem} (entry {index + 1})")


def cluster_size_problem(recipe: Recipe, cluster: Cluster) -> str | None:
    """A lane spans exactly its cluster's nodes: one rank per node."""
    if len(cluster.nodes) == recipe.lane.nodes:
        return None
    return (
        f"cluster {cluster.name!r} has {len(cluster.nodes)} nodes but the recipe needs "
        f"{recipe.lane.nodes}: pick a cluster of {recipe.lane.nodes} nodes"
    )


def renders_no_flashinfer_autotune(serve: ServeContract) -> bool:
    return serve.enable_flashinfer_autotune is False or bool(
        serve.extra_args.get("no-enable-flashinfer-autotune")
    )


def check_exclusive_flags(recipe: Recipe, src: TomlSource) -> Iterator[Problem]:
    """Flags vLLM refuses together, caught before a long boot ends in a ValueError (seed §1)."""
    serve = recipe.serve
    if renders_no_flashinfer_autotune(serve) and "enable_flashinfer_autotune" in (
        serve.kernel_config or {}
    ):
        yield src.problem(
            ("serve", "kernel_config"),
            "kernel_config.enable_flashinfer_autotune conflicts with "
            "--no-enable-flashinfer-autotune (the engine dies with a ValueError after loading): "
            "drop enable_flashinfer_autotune from kernel_config",
        )
    typed = {name.replace("_", "-") for name in ServeContract.model_fields} - {"extra-args"}
    for flag in serve.extra_args:
        if flag in RENDERED_FLAGS:
            yield src.problem(
                ("serve", "extra_args", flag),
                f"--{flag} is set by the cockpit from the cluster and rank; remove it",
            )
        elif flag in typed:
            yield src.problem(
                ("serve", "extra_args", flag),
                f"--{flag} has its own field: set serve.{flag.replace('-', '_')} instead",
            )
        elif flag == API_KEY_FLAG:
            yield src.problem(
                ("serve", "extra_args", flag),
                f"--{flag} would put the key on the engine's command line (the node's ps and "
                f"docker inspect show it): remove it and set {API_KEY_ENV} in [env] (it reaches "
                "the engine through the env file, and the cockpit sends it as a Bearer token)",
            )


def check_env(recipe: Recipe, src: TomlSource) -> Iterator[Problem]:
    dropped = {
        d.key: d
        for d in recipe.deviations
        if d.kind is DeviationKind.ENV and d.action is DeviationAction.DROP
    }
    for key in recipe.env:
        if key in dropped:
            yield src.problem(
                ("env", key),
                f"{key} is dropped by a documented deviation ({dropped[key].why}); "
                "remove it from [env]",
            )
        elif key in NCCL_BLOCK_KEYS:
            yield src.problem(
                ("env", key),
                f"{key} comes from the cluster's [nccl] block; remove it from the recipe",
            )
    dropped_flags = {
        d.key.lstrip("-")
        for d in recipe.deviations
        if d.kind is DeviationKind.FLAG and d.action is DeviationAction.DROP
    }
    for flag in recipe.serve.extra_args:
        if flag in dropped_flags:
            yield src.problem(
                ("serve", "extra_args", flag),
                f"--{flag} is dropped by a documented deviation; remove it",
            )


def check_image(recipe: Recipe, src: TomlSource) -> Iterator[Problem]:
    if not is_digest_ref(recipe.image.ref):
        yield src.problem(
            ("image", "ref"),
            "image must be referenced by digest (repo@sha256:<hex>), tags move: "
            f"got {recipe.image.ref!r}",
        )


def check_model_len(recipe: Recipe, src: TomlSource) -> Iterator[Problem]:
    if recipe.serve.max_model_len > recipe.model.max_model_len:
        yield src.problem(
            ("serve", "max_model_len"),
            f"max_model_len {recipe.serve.max_model_len} exceeds the model's maximum "
            f"{recipe.model.max_model_len}: use at most {recipe.model.max_model_len}",
        )


def check_recipe(
    recipe: Recipe,
    src: TomlSource,
    clusters: dict[str, Cluster] | None,
    broken: frozenset[str] = frozenset(),
) -> list[Problem]:
    """Every cross-field rule for one recipe, all problems at once (`clusters` None: the
    clusters file did not load, its own problem says why; no recipe is blamed for it)."""
    return [
        *check_tensor_parallel(recipe, src),
        *(check_clusters(recipe, src, clusters, broken) if clusters is not None else ()),
        *check_exclusive_flags(recipe, src),
        *check_env(recipe, src),
        *check_image(recipe, src),
        *check_model_len(recipe, src),
    ]
