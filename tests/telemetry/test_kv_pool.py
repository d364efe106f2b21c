"""The KV pane's pool in GiB on a real engine: vLLM reports `kv_cache_memory_bytes="None"` unless
its flag is set, so the pool is derived from blocks × block size × the lane's KV bytes per token."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.telemetry.metrics import kv_pool_gib, parse_metrics

CAPTURE = Path(__file__).parents[1] / "fixtures" / "telemetry" / "vllm-0.32-cpu"


def test_pool_gib_is_reported_or_derived() -> None:
    text = (CAPTURE / "metrics_idle.txt").read_text()
    reported = parse_metrics(text)
    # the CPU build sets the bytes from VLLM_CPU_KVCACHE_SPACE=1: 16,384 blocks of 128 tokens
    assert reported.pool_tokens == 2_097_152
    assert kv_pool_gib(reported, None) == pytest.approx(1.0)
    unset = parse_metrics(
        text.replace('kv_cache_memory_bytes="1073741824"', 'kv_cache_memory_bytes="None"')
    )
    assert unset.kv_cache_memory_bytes is None
    assert kv_pool_gib(unset, None) is None
    # the tiny Llama: 2 (K, V) x 2 layers x 2 KV heads x 32 dims x 2 bytes = 512 bytes per token
    assert kv_pool_gib(unset, 512) == pytest.approx(1.0)
