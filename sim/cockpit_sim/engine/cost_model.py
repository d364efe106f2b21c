"""Duration of one engine step from what it computes: tokens, context depth and the lane's TP.

    step = fixed                                         (launch, all-reduce latency, sampling)
         + Σ decode requests (per_request + per_ctx_token × depth)
         + [prefill tokens > largest CUDA graph] × prefill_step   (piecewise path, expert sweep)
         + per_token × prefill tokens
         + attn × Σ chunks n × (start + n / 2)           (each new token attends to its prefix)

Steps whose prefill fits a captured CUDA graph (≤ the largest capture size, 96 in the seed's
recipes) run the decode path and skip the piecewise prefill constant: that is why a tiny request
(llama-benchy's latency probe) answers in one decode step time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cockpit_sim.engine.calibration import LaneCalibration


@dataclass(frozen=True)
class PrefillChunk:
    """`tokens` new prompt tokens computed on top of `start` tokens already in the KV cache."""

    start: int
    tokens: int


@dataclass(frozen=True)
class StepShape:
    """What one step computes: decode requests by context depth and prefill chunks."""

    decode_depths: Sequence[int]
    prefill: Sequence[PrefillChunk]

    @property
    def prefill_tokens(self) -> int:
        return sum(c.tokens for c in self.prefill)


def step_duration(cal: LaneCalibration, shape: StepShape, graph_max_tokens: int) -> float:
    """Engine seconds the step takes (zero for an empty step)."""
    if not shape.decode_depths and not shape.prefill:
        return 0.0
    seconds = cal.step_fixed_s
    seconds += len(shape.decode_depths) * cal.decode_per_req_s
    seconds += cal.decode_per_ctx_token_s * sum(shape.decode_depths)
    prefill_tokens = shape.prefill_tokens
    if prefill_tokens > graph_max_tokens:
        seconds += cal.prefill_step_s
    seconds += cal.prefill_per_token_s * prefill_tokens
    seconds += cal.prefill_attn_s * sum(c.tokens * (c.start + c.tokens / 2) for c in shape.prefill)
    return seconds


def gpu_utilisation(shape: StepShape) -> float:
    """Share of the step the SMs are busy (0..1): prefill saturates, a lone decode does not."""
    if shape.prefill_tokens > 0:
        return 0.99
    if not shape.decode_depths:
        return 0.0
    return min(0.97, 0.78 + 0.04 * len(shape.decode_depths))
