"""One engine parameter set per lane (model family × tensor-parallel size), never per-depth tables.

Every figure the simulated engine shows — step times, KV pool, boot durations — derives from the
`LaneCalibration` of its lane through `cost_model` and `scheduler`. The values were fitted once (see
tests/sim_engine/test_calibration.py, which drives the scheduler like llama-benchy does) against
shared/reference/seed-measurements.toml:

- flash TP4: warm tg c1 67.3 → 44.4 t/s over 0..256K, c2 ≥ c1, pp2048@d0 4314 t/s and the cold-c2
  collapse 13.7/5.7/2.1 t/s at 65K/131K/256K;
- flash TP2: pp2048 2973 / 2302 / 1558 / 1023 / 612 t/s at depth 0 / 16K / 65K / 128K / 256K;
- pro TP8: pp2048 2386 / 2270 / 2086 t/s at depth 0 / 4K / 8K, KV pool 3.57M tokens in 26.76 GiB.

Known tension in the seed, kept visible rather than hidden: the cold-c2 windows imply an attention
cost over depth for flash TP4 about ten times lower than the pp-at-depth curves of flash TP2 and
pro TP8 imply; each lane carries its own fitted value (see `prefill_attn_s`).

N-gram speculation accepts a fixed share of its drafts per lane (`ngram_accept_rate`): 0.83 on
the small lane, what the real vLLM 0.32 CPU lane (a tiny random Llama, which repeats itself)
accepted; 0.35 on MiMo, an assumption for chat text (no seed figure).

Speculative decoding: a decode step verifies `num_speculative_tokens` drafts per request and emits
the accepted ones plus one; the mean acceptance length decays with context depth from
`accept_len_0` to `accept_len_inf` (the drafter sees a short window), which is what bends the c1
curve from 67 to 45 t/s while the hybrid (sliding-window) attention keeps the per-token attention
cost over depth small.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from cockpit.plan.memory_fit import auto_pool_gib, pool_tokens


@dataclass(frozen=True)
class LaneCalibration:
    """Engine parameters of one lane; times in seconds of engine time, sizes per rank."""

    key: str
    weights_gib_per_rank: float
    activation_gib: float
    kv_bytes_per_token: int
    step_fixed_s: float
    decode_per_req_s: float
    decode_per_ctx_token_s: float
    prefill_step_s: float
    prefill_per_token_s: float
    prefill_attn_s: float
    accept_len_0: float
    accept_len_inf: float
    accept_decay_tokens: float
    ngram_accept_rate: float
    weights_load_s: float
    autotune_candidates: int
    autotune_s: float
    graph_capture_s: float
    profile_s: float
    num_attention_heads: int
    num_kv_heads: int
    max_position_embeddings: int

    def acceptance_length(self, depth: int, num_spec: int, method: str | None = None) -> float:
        """Mean tokens a decode step emits per request at this context depth (1 without drafts).

        A drafter model (the recipes' dflash, eagle, mtp, ...) follows the lane's fitted decay over
        depth; n-gram speculation (`method` "ngram") accepts the lane's measured share of its
        drafts, whatever the depth (it looks the drafts up in the request's own tokens)."""
        if num_spec <= 0:
            return 1.0
        if method in ("ngram", "ngram_gpu"):
            return 1.0 + self.ngram_accept_rate * num_spec
        mean = self.accept_len_inf + (self.accept_len_0 - self.accept_len_inf) * math.exp(
            -depth / self.accept_decay_tokens
        )
        return max(1.0, min(mean, num_spec + 1.0))

    def kv_pool(self, gpu_memory_utilization: float) -> tuple[float, int]:
        """(KV GiB per rank, tokens) of the auto pool, sized as the cockpit's memory fit sizes
        it (budget minus weights and activations) from this lane's fitted figures."""
        gib = auto_pool_gib(gpu_memory_utilization, self.weights_gib_per_rank, self.activation_gib)
        return gib, pool_tokens(gib, self.kv_bytes_per_token)


_FLASH_TP4 = LaneCalibration(
    key="flash-tp4",
    weights_gib_per_rank=43.9,
    activation_gib=3.1,
    kv_bytes_per_token=10_240,
    step_fixed_s=0.0102,
    decode_per_req_s=0.0344,
    decode_per_ctx_token_s=4.0e-9,
    prefill_step_s=0.44,
    prefill_per_token_s=1.0e-6,
    prefill_attn_s=3.5e-10,
    accept_len_0=3.35,
    accept_len_inf=2.15,
    accept_decay_tokens=16_000.0,
    ngram_accept_rate=0.35,
    weights_load_s=160.0,
    autotune_candidates=394,
    autotune_s=1_540.0,
    graph_capture_s=19.0,
    profile_s=21.0,
    num_attention_heads=64,
    num_kv_heads=4,
    max_position_embeddings=524_288,
)

_FLASH_TP2 = replace(
    _FLASH_TP4,
    key="flash-tp2",
    weights_gib_per_rank=87.0,
    activation_gib=2.6,
    kv_bytes_per_token=20_480,
    step_fixed_s=0.0125,
    decode_per_req_s=0.0480,
    decode_per_ctx_token_s=8.0e-9,
    prefill_step_s=0.30,
    prefill_per_token_s=1.85e-4,
    prefill_attn_s=5.0e-9,
    weights_load_s=176.0,
)

_PRO_TP8 = replace(
    _FLASH_TP4,
    key="pro-tp8",
    weights_gib_per_rank=72.0,
    activation_gib=2.985,
    kv_bytes_per_token=8_048,
    step_fixed_s=0.0150,
    decode_per_req_s=0.0520,
    decode_per_ctx_token_s=6.0e-9,
    prefill_step_s=0.30,
    prefill_per_token_s=2.70e-4,
    prefill_attn_s=6.3e-9,
    accept_len_0=2.8,
    accept_len_inf=2.0,
    weights_load_s=165.0,
    autotune_s=2_020.0,
    graph_capture_s=24.0,
    profile_s=26.0,
    num_attention_heads=128,
    num_kv_heads=8,
)

_SMALL = LaneCalibration(
    key="small",
    weights_gib_per_rank=1.2,
    activation_gib=0.8,
    kv_bytes_per_token=57_344,
    step_fixed_s=0.004,
    decode_per_req_s=0.0015,
    decode_per_ctx_token_s=2.0e-9,
    prefill_step_s=0.01,
    prefill_per_token_s=2.0e-5,
    prefill_attn_s=1.0e-10,
    accept_len_0=1.0,
    accept_len_inf=1.0,
    accept_decay_tokens=1.0,
    ngram_accept_rate=0.83,
    weights_load_s=4.0,
    autotune_candidates=0,
    autotune_s=0.0,
    graph_capture_s=6.0,
    profile_s=3.0,
    num_attention_heads=16,
    num_kv_heads=8,
    max_position_embeddings=40_960,
)

_LANES = {c.key: c for c in (_FLASH_TP4, _FLASH_TP2, _PRO_TP8, _SMALL)}


def model_family(model_path: str) -> str:
    """'flash', 'pro' or 'small' from a HF snapshot path (`models--Org--Name/snapshots/rev`)."""
    name = model_path.lower()
    if "mimo" in name and "pro" in name:
        return "pro"
    if "mimo" in name:
        return "flash"
    return "small"


def for_lane(family: str, tp: int) -> LaneCalibration:
    """The fitted set of the lane; other TP sizes scale the nearest fitted set of the family.

    Scaling rule for unfitted lanes: per-rank weights and KV bytes shrink with TP, per-token
    compute shrinks by TP^0.75 (communication eats the rest); the step constants stay.
    """
    fitted = {"flash": {4: "flash-tp4", 2: "flash-tp2"}, "pro": {8: "pro-tp8"}}.get(family, {})
    if tp in fitted:
        return _LANES[fitted[tp]]
    if not fitted:
        return _LANES["small"]
    base_tp = min(fitted, key=lambda t: abs(t - tp))
    base = _LANES[fitted[base_tp]]
    ratio = base_tp / tp
    compute = ratio**0.75
    return replace(
        base,
        key=f"{family}-tp{tp}",
        weights_gib_per_rank=base.weights_gib_per_rank * ratio,
        kv_bytes_per_token=max(1, int(base.kv_bytes_per_token * ratio)),
        decode_per_req_s=base.decode_per_req_s * compute,
        prefill_per_token_s=base.prefill_per_token_s * compute,
        prefill_attn_s=base.prefill_attn_s * compute,
    )


def with_model_config(cal: LaneCalibration, config: dict[str, object]) -> LaneCalibration:
    """Take head counts and max positions from the snapshot's config.json when it has them."""
    heads = config.get("num_attention_heads")
    kv_heads = config.get("num_key_value_heads")
    positions = config.get("max_position_embeddings")
    return replace(
        cal,
        num_attention_heads=heads if isinstance(heads, int) else cal.num_attention_heads,
        num_kv_heads=kv_heads if isinstance(kv_heads, int) else cal.num_kv_heads,
        max_position_embeddings=(
            positions if isinstance(positions, int) else cal.max_position_embeddings
        ),
    )
