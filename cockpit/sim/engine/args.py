"""The launcher contract of the recipes → an `EngineArgs`, parsed like `vllm serve` parses it.

Unknown flags are accepted and ignored (vLLM would know them); every flag given is reported back in
`non_default_args` so the startup log shows the same `non-default args: {...}` line vLLM prints.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class EngineArgs:
    model: str
    tensor_parallel_size: int = 1
    nnodes: int = 1
    node_rank: int = 0
    master_addr: str = "127.0.0.1"
    master_port: int = 29501
    headless: bool = False
    host: str = "127.0.0.1"
    port: int = 8000
    served_model_name: str | None = None
    max_model_len: int | None = None
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    gpu_memory_utilization: float = 0.9
    kv_cache_dtype: str = "auto"
    block_size: int = 16
    enable_prefix_caching: bool = True
    speculative_config: dict[str, Any] = field(default_factory=dict)
    compilation_config: dict[str, Any] = field(default_factory=dict)
    non_default_args: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.served_model_name or self.model

    @property
    def num_spec_tokens(self) -> int:
        value = self.speculative_config.get("num_speculative_tokens", 0)
        return value if isinstance(value, int) else 0

    @property
    def graph_max_tokens(self) -> int:
        """Largest CUDA graph capture size: prefills up to it run the decode path."""
        sizes = self.compilation_config.get("cudagraph_capture_sizes")
        if isinstance(sizes, list) and sizes:
            return max(int(s) for s in sizes)
        size = self.compilation_config.get("max_cudagraph_capture_size")
        return int(size) if isinstance(size, int) else 512


def _json(text: str) -> dict[str, Any]:
    value = json.loads(text)
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="vllm", add_help=False)
    p.add_argument("command", choices=["serve"])
    p.add_argument("model")
    p.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
    p.add_argument("--nnodes", type=int, default=1)
    p.add_argument("--node-rank", type=int, default=0)
    p.add_argument("--master-addr", default="127.0.0.1")
    p.add_argument("--master-port", type=int, default=29501)
    p.add_argument("--headless", action="store_true")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--served-model-name", nargs="+")
    p.add_argument("--max-model-len", type=int)
    p.add_argument("--max-num-seqs", type=int, default=256)
    p.add_argument("--max-num-batched-tokens", type=int, default=8192)
    p.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    p.add_argument("--kv-cache-dtype", default="auto")
    p.add_argument("--block-size", type=int, default=16)
    p.add_argument("--enable-prefix-caching", action=argparse.BooleanOptionalAction, default=None)
    p.add_argument("--speculative-config", type=_json, default={})
    p.add_argument("--compilation-config", type=_json, default={})
    return p


def parse(argv: list[str]) -> tuple[EngineArgs, list[str]]:
    """(parsed args, unknown flags); raises SystemExit on a malformed contract, like argparse."""
    parser = _parser()
    ns, unknown = parser.parse_known_args(argv)
    given = {k: v for k, v in vars(ns).items() if k != "command" and v != parser.get_default(k)}
    given["model"] = ns.model
    for index, flag in enumerate(unknown):
        if not flag.startswith("--"):
            continue
        key, eq, value = flag[2:].partition("=")
        following = unknown[index + 1] if index + 1 < len(unknown) else "--"
        given.setdefault(
            key.replace("-", "_"),
            value if eq else (True if following.startswith("--") else following),
        )
    served = ns.served_model_name[0] if ns.served_model_name else None
    args = EngineArgs(
        model=ns.model,
        tensor_parallel_size=ns.tensor_parallel_size,
        nnodes=ns.nnodes,
        node_rank=ns.node_rank,
        master_addr=ns.master_addr,
        master_port=ns.master_port,
        headless=ns.headless,
        host=ns.host,
        port=ns.port,
        served_model_name=served,
        max_model_len=ns.max_model_len,
        max_num_seqs=ns.max_num_seqs,
        max_num_batched_tokens=ns.max_num_batched_tokens,
        gpu_memory_utilization=ns.gpu_memory_utilization,
        kv_cache_dtype=ns.kv_cache_dtype,
        block_size=ns.block_size,
        enable_prefix_caching=ns.enable_prefix_caching is not False,
        speculative_config=ns.speculative_config,
        compilation_config=ns.compilation_config,
        non_default_args=given,
    )
    return args, unknown
