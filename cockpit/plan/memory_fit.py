"""Will a lane fit in memory? Per rank, as vLLM sizes it on a GB10 (pure: parsed numbers in).

vLLM takes `gpu-memory-utilization` of the device's memory, loads its share of the weights, runs
a profile (activations, CUDA graphs, NCCL, the CUDA context: the runtime) and gives the rest to
the KV pool. It refuses to start when the pool cannot hold one request of `max-model-len` — after
a boot of minutes (40 on MiMo Pro's first) — so the cockpit says it before the launch.

KV per token per rank comes from the model's config.json: full-attention layers hold every token
of a sequence; sliding-window layers (MiMo's `hybrid_layer_pattern`, transformers' `layer_types`)
hold at most their window plus one batch of prefill per sequence, as vLLM budgets them; MLA
layers hold one latent that every TP rank keeps whole.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cockpit.config.models import Recipe

GIB = 1 << 30
GB10_MEMORY_GIB = 119.7
"""What CUDA reports as total memory on a GB10 (128 GB of unified LPDDR5x)."""
RUNTIME_RESERVE_GIB = 3.3
"""Activations, CUDA graphs, NCCL buffers and the CUDA context of one rank. The seed's one
measured auto pool (MiMo Pro TP8 at 0.85: 26.76 GiB beside 573.5 GiB of weights over 8 ranks)
leaves 3.3 GiB for them; the real figure grows with `max-num-batched-tokens` and the model."""

_DTYPE_BYTES = {
    "bfloat16": 2, "float16": 2, "half": 2, "float32": 4, "float": 4,
    "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp8_inc": 1, "fp8_ds_mla": 1,
}  # fmt: skip


class FitError(ValueError):
    """The estimate cannot be made, and why (a config field missing, an unknown KV dtype)."""


@dataclass(frozen=True)
class LayerGroup:
    """Attention layers of one shape. `window` None: full attention (every token kept)."""

    count: int
    kv_heads: int
    k_size: int
    v_size: int
    window: int | None = None
    latent: bool = False  # MLA: one compressed KV, the same on every TP rank

    def token_bytes(self, tp: int, dtype_bytes: int) -> int:
        """Bytes one token takes in these layers on one rank (KV heads split over TP, at least
        one per rank: vLLM replicates a head rather than split it)."""
        heads = 1 if self.latent else max(1, self.kv_heads // tp)
        return self.count * heads * (self.k_size + self.v_size) * dtype_bytes


def _text_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    inner = config.get("text_config")
    return inner if isinstance(inner, Mapping) else config


def _int(config: Mapping[str, Any], key: str, default: int | None = None) -> int:
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise FitError(f"config.json has no {key}")
    return value


def kv_layers(config: Mapping[str, Any]) -> tuple[LayerGroup, ...]:
    """The model's attention layers grouped by shape, from its config.json."""
    cfg = _text_config(config)
    layers = _int(cfg, "num_hidden_layers")
    if "kv_lora_rank" in cfg:  # MLA (DeepSeek V2/V3, Kimi K2): latent + rope key per token
        rank, rope = _int(cfg, "kv_lora_rank"), _int(cfg, "qk_rope_head_dim")
        return (LayerGroup(layers, 1, rank + rope, 0, latent=True),)
    heads = _int(cfg, "num_attention_heads")
    kv_heads = _int(cfg, "num_key_value_heads", heads)
    head = _head_dim(cfg, heads)
    full = LayerGroup(layers, kv_heads, head, _int(cfg, "v_head_dim", head))
    pattern = cfg.get("hybrid_layer_pattern")  # MiMo V2: 1 marks a sliding-window layer
    if isinstance(pattern, list) and pattern:
        sliding = sum(1 for kind in pattern[:layers] if kind == 1)
        swa_head = _int(cfg, "swa_head_dim", head)
        swa = LayerGroup(
            sliding,
            _int(cfg, "swa_num_key_value_heads", kv_heads),
            swa_head,
            _int(cfg, "swa_v_head_dim", swa_head),
            window=_int(cfg, "sliding_window_size", cfg.get("sliding_window")),
        )
        return _present(LayerGroup(layers - sliding, kv_heads, full.k_size, full.v_size), swa)
    kinds = cfg.get("layer_types")  # transformers: "sliding_attention" / "full_attention"
    if isinstance(kinds, list) and "sliding_attention" in kinds:
        sliding = kinds[:layers].count("sliding_attention")
        window = _int(cfg, "sliding_window")
        return _present(
            LayerGroup(layers - sliding, kv_heads, head, full.v_size),
            LayerGroup(sliding, kv_heads, head, full.v_size, window=window),
        )
    return (full,)


def _head_dim(cfg: Mapping[str, Any], heads: int) -> int:
    if cfg.get("head_dim") is not None:
        return _int(cfg, "head_dim")
    if cfg.get("hidden_size") is None:
        raise FitError("config.json has neither head_dim nor hidden_size")
    return _int(cfg, "hidden_size") // heads


def _present(*groups: LayerGroup) -> tuple[LayerGroup, ...]:
    return tuple(g for g in groups if g.count)


def kv_dtype_bytes(kv_cache_dtype: str, dtype: str = "auto") -> int:
    """Bytes of one KV element: `--kv-cache-dtype`, or with "auto" the served dtype (vLLM
    serves a float32 checkpoint in 16 bits unless `--dtype` says otherwise)."""
    name = kv_cache_dtype if kv_cache_dtype != "auto" else dtype
    if name == "auto":
        return 2
    if name not in _DTYPE_BYTES:
        raise FitError(f"kv_cache_dtype {name!r} is not one the estimate knows")
    return _DTYPE_BYTES[name]


def auto_pool_gib(
    gpu_memory_utilization: float,
    weights_gib: float,
    runtime_gib: float,
    memory_gib: float = GB10_MEMORY_GIB,
) -> float:
    """The KV pool of one rank when nothing pins it: its share of memory less weights and
    runtime (negative: no room at all)."""
    return memory_gib * gpu_memory_utilization - weights_gib - runtime_gib


def pool_tokens(pool_gib: float, token_bytes: int) -> int:
    """Tokens a pool of `pool_gib` holds at `token_bytes` per token (0 for an empty pool)."""
    return max(0, int(pool_gib * GIB / token_bytes))


@dataclass(frozen=True)
class MemoryFit:
    """One rank's memory for a recipe: weights, runtime, the KV pool vLLM will allocate, and
    what that pool holds at the recipe's max-model-len × max-num-seqs."""

    tp: int
    memory_gib: float
    gpu_memory_utilization: float
    weights_gib: float  # per rank
    runtime_gib: float
    token_bytes: int  # per token per rank, in the full-attention layers
    window_bytes: int  # per sequence per rank at most, in the sliding-window layers
    max_model_len: int
    max_num_seqs: int

    @property
    def budget_gib(self) -> float:
        return self.memory_gib * self.gpu_memory_utilization

    @property
    def pool_gib(self) -> float:
        return auto_pool_gib(
            self.gpu_memory_utilization, self.weights_gib, self.runtime_gib, self.memory_gib
        )

    @property
    def pool_tokens(self) -> int:
        return pool_tokens(self.pool_gib, self.token_bytes)

    @property
    def request_gib(self) -> float:
        """KV one request of max-model-len needs on this rank (what vLLM checks at start)."""
        return (self.max_model_len * self.token_bytes + self.window_bytes) / GIB

    @property
    def at_once(self) -> int:
        """Requests of max-model-len the pool holds together (capped by max-num-seqs)."""
        if self.pool_gib <= 0:
            return 0
        return min(self.max_num_seqs, int(self.pool_gib // self.request_gib))

    @property
    def fits(self) -> bool:
        """vLLM will start: the pool holds one request of max-model-len."""
        return self.at_once >= 1

    @property
    def headroom_gib(self) -> float:
        """Pool left once `at_once` requests of max-model-len are in it."""
        return self.pool_gib - self.at_once * self.request_gib

    def line(self) -> str:
        """The one line a plan shows: the budget split, then plainly whether it fits."""
        pool = max(self.pool_gib, 0.0)
        head = (
            f"memory per rank: weights {self.weights_gib:.1f} GiB + runtime "
            f"{self.runtime_gib:.1f} GiB + KV {pool:.1f} GiB (≈ {_count(self.pool_tokens)} "
            f"tokens) of {self.memory_gib:g} GiB × {self.gpu_memory_utilization:g}"
        )
        length = f"{self.max_model_len:,}"
        if self.pool_gib <= 0:
            return f"{head} — does not fit: weights and runtime leave no room for KV"
        if not self.fits:
            return (
                f"{head} — does not fit: one {length}-token request needs "
                f"{self.request_gib:.1f} GiB"
            )
        if self.at_once == self.max_num_seqs:
            verdict = f"fits {self.max_num_seqs} × {length} tokens"
        else:
            verdict = f"fits {self.at_once} of {self.max_num_seqs} sequences at {length} tokens"
        return f"{head} — {verdict}, {self.headroom_gib:.1f} GiB headroom"

    def problem(self) -> tuple[str, str, str] | None:
        """(recipe field, what is wrong with its numbers, the fix) when vLLM would refuse to
        start; None when it fits."""
        if self.pool_gib <= 0:
            return (
                "serve.gpu_memory_utilization",
                f"gpu_memory_utilization {self.gpu_memory_utilization:g} gives "
                f"{self.budget_gib:.1f} GiB per rank; weights ({self.weights_gib:.1f} GiB) and "
                f"runtime ({self.runtime_gib:.1f} GiB) leave no KV cache",
                self._raise_utilisation(),
            )
        if self.fits:
            return None
        longest = (self.pool_gib * GIB - self.window_bytes) // self.token_bytes
        return (
            "serve.max_model_len",
            f"max_model_len {self.max_model_len:,} needs {self.request_gib:.1f} GiB of KV per "
            f"rank; the pool holds {self.pool_gib:.1f} GiB (≈ {_count(self.pool_tokens)} tokens)",
            f"set max_model_len ≤ {int(max(longest, 0)):,}, or {self._raise_utilisation()}",
        )

    def _raise_utilisation(self) -> str:
        """The utilisation at which one request of max-model-len fits, as a fix."""
        need = (self.weights_gib + self.runtime_gib + self.request_gib) / self.memory_gib
        if need > 1:
            return "use more nodes (fewer weights per rank): no gpu_memory_utilization is enough"
        return f"raise gpu_memory_utilization to ≥ {math.ceil(need * 100) / 100:g}"


@dataclass(frozen=True)
class FitUnknown:
    """No estimate: the node did not answer, or its snapshot does not say enough (and why)."""

    reason: str

    def line(self) -> str:
        return f"memory per rank: unknown — {self.reason}"

    def problem(self) -> None:
        return None


def _count(tokens: int) -> str:
    """620K, 3.45M: a token count as an operator reads it."""
    if tokens >= 1_000_000:
        return f"{tokens / 1e6:.2f}M"
    if tokens >= 1_000:
        return f"{tokens / 1e3:.0f}K"
    return str(tokens)


def estimate(
    recipe: Recipe,
    config: Mapping[str, Any],
    weights_bytes: int,
    memory_gib: float = GB10_MEMORY_GIB,
) -> MemoryFit:
    """The fit of `recipe` per rank from the snapshot's config.json and its weights' bytes
    (the index's total_size); raises FitError when the config lacks what the KV needs."""
    serve, tp = recipe.serve, recipe.lane.tensor_parallel_size
    batched = serve.max_num_batched_tokens
    dtype = kv_dtype_bytes(serve.kv_cache_dtype, str(serve.extra_args.get("dtype", "auto")))
    groups = kv_layers(config)
    full = [g for g in groups if g.window is None]
    if not full:
        raise FitError("config.json has no full-attention layer: the estimate needs one")
    window = sum(
        g.token_bytes(tp, dtype) * min(serve.max_model_len, g.window - 1 + batched)
        for g in groups
        if g.window is not None
    )
    return MemoryFit(
        tp=tp,
        memory_gib=memory_gib,
        gpu_memory_utilization=serve.gpu_memory_utilization,
        weights_gib=weights_bytes / tp / GIB,
        runtime_gib=RUNTIME_RESERVE_GIB,
        token_bytes=sum(g.token_bytes(tp, dtype) for g in full),
        window_bytes=window,
        max_model_len=serve.max_model_len,
        max_num_seqs=serve.max_num_seqs,
    )
