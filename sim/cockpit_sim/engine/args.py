"""The launcher contract of the recipes → an `EngineArgs`, parsed like `vllm serve` 0.32 parses it.

Every option of the real `vllm serve` is known (`vllm_flags.txt`, read from the real CLI's parser);
the ones the simulator models are typed fields of `EngineArgs`, the others are accepted and only
reported. An option vLLM does not have is refused as the real CLI refuses it: argparse's usage of
the `vllm` command and `vllm: error: unrecognized arguments: ...` on stderr, exit status 2. Like
vLLM's `FlexibleArgumentParser`, `--max_model_len` means `--max-model-len`. Every option given is
reported back in `non_default_args` for the startup log's `non-default args: {...}` line.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, NoReturn

FLAGS_FILE = Path(__file__).with_name("vllm_flags.txt")
USAGE = (
    "usage: vllm [-h] [-v]\n"
    "            {chat,complete,serve,launch,bench,collect-env,download-kernels,preload,run-batch,"
    "snapshot}\n"
    "            ...\n"
)
"""What the real `vllm` prints before an argument error (the top-level parser's usage)."""
DEFAULT_GPU_MEMORY_UTILIZATION = 0.92
"""vLLM 0.32's `CacheConfig.gpu_memory_utilization` default."""


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
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION
    kv_cache_dtype: str = "auto"
    block_size: int = 16
    user_block_size: bool = False
    num_gpu_blocks_override: int | None = None
    kv_cache_memory_bytes: int | None = None
    enable_prefix_caching: bool = True
    speculative_config: dict[str, Any] = field(default_factory=dict)
    compilation_config: dict[str, Any] = field(default_factory=dict)
    api_keys: tuple[str, ...] = ()
    """`--api-key` (vLLM takes several); none: the env's VLLM_API_KEY (`server.api_keys`)."""
    non_default_args: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.served_model_name or self.model

    @property
    def num_spec_tokens(self) -> int:
        value = self.speculative_config.get("num_speculative_tokens", 0)
        return value if isinstance(value, int) else 0

    @property
    def spec_method(self) -> str | None:
        method = self.speculative_config.get("method")
        return str(method) if method else None

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


def human_readable_int(value: str) -> int:
    """vLLM's `human_readable_int`: '1k' = 1000, '1K' = 1024, '25.6k' = 25600, '8G' = 8 GiB."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT])", value.strip())
    if not match:
        return int(value)
    number, suffix = match.groups()
    if suffix.islower():
        return int(float(number) * 10 ** (3 * "kmgt".index(suffix) + 3))
    return int(number) * 2 ** (10 * "KMGT".index(suffix) + 10)


class _VllmParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        refuse(message)


def refuse(message: str) -> NoReturn:
    """Exit the way the real `vllm` CLI does on a bad command line."""
    sys.stderr.write(USAGE + f"vllm: error: {message}\n")
    sys.exit(2)


@cache
def vllm_flags() -> dict[str, str]:
    """Every option string of the real `vllm serve` → its nargs ("0" for a switch)."""
    flags: dict[str, str] = {}
    for line in FLAGS_FILE.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            option, nargs = line.split("\t")
            flags[option] = nargs
    return flags


_MODELLED: dict[str, dict[str, Any]] = {
    "--tensor-parallel-size": {"type": int, "default": 1},
    "--nnodes": {"type": int, "default": 1},
    "--node-rank": {"type": int, "default": 0},
    "--master-addr": {"default": "127.0.0.1"},
    "--master-port": {"type": int, "default": 29501},
    "--headless": {"action": "store_true"},
    "--host": {"default": "127.0.0.1"},
    "--port": {"type": int, "default": 8000},
    "--served-model-name": {"nargs": "+"},
    "--max-model-len": {"type": human_readable_int},
    "--max-num-seqs": {"type": int, "default": 256},
    "--max-num-batched-tokens": {"type": human_readable_int, "default": 8192},
    "--gpu-memory-utilization": {"type": float, "default": DEFAULT_GPU_MEMORY_UTILIZATION},
    "--kv-cache-dtype": {"default": "auto"},
    "--block-size": {"type": int},
    "--num-gpu-blocks-override": {"type": int},
    "--kv-cache-memory-bytes": {"type": human_readable_int},
    "--enable-prefix-caching": {"action": argparse.BooleanOptionalAction},
    "--speculative-config": {"type": _json, "default": {}},
    "--compilation-config": {"type": _json, "default": {}},
}
_SHORT = {"--tensor-parallel-size": "-tp", "--compilation-config": "-cc"}


def _parser() -> argparse.ArgumentParser:
    p = _VllmParser(prog="vllm", add_help=False)
    p.add_argument("command", choices=["serve"])
    p.add_argument("model")
    for option, spec in _MODELLED.items():
        names = [option, _SHORT[option]] if option in _SHORT else [option]
        p.add_argument(*names, **spec)
    modelled = set(_MODELLED) | set(_SHORT.values()) | {"--no-enable-prefix-caching"}
    flags = vllm_flags()
    for option, nargs in flags.items():
        if option in modelled:
            continue
        positive = "--" + option[len("--no-") :]
        if option.startswith("--no-") and flags.get(positive) == "0":
            dest = positive[2:].replace("-", "_")
            p.add_argument(option, action="store_const", const=False, dest=dest, default=None)
        elif nargs == "0":
            p.add_argument(option, action="store_const", const=True, default=None)
        else:
            p.add_argument(option, nargs=None if nargs == "1" else nargs, default=None)
    return p


def _dashes(argv: list[str]) -> list[str]:
    """`--max_model_len=8` → `--max-model-len=8` (the option name only), and the dotted JSON form
    `--speculative-config.num_speculative_tokens 5` folded into `--speculative-config {...}`, as
    vLLM's `FlexibleArgumentParser` reads them."""
    out: list[str] = []
    dotted: dict[str, dict[str, Any]] = {}
    words = iter(argv)
    for arg in words:
        if arg.startswith("--"):
            key, eq, value = arg.partition("=")
            base, dot, path = key.partition(".")
            base = base.replace("_", "-")
            if dot and vllm_flags().get(base) == "1":
                raw = value if eq else next(words, "")
                _nest(dotted.setdefault(base, {}), path.split("."), raw)
                continue
            arg = base + (dot + path) + eq + value
        out.append(arg)
    for base, tree in dotted.items():
        if base in out:
            at = out.index(base) + 1
            out[at] = json.dumps(_json(out[at]) | tree)
        else:
            out += [base, json.dumps(tree)]
    return out


def _nest(tree: dict[str, Any], path: list[str], raw: str) -> None:
    for key in path[:-1]:
        tree = tree.setdefault(key, {})
    try:
        tree[path[-1]] = json.loads(raw)
    except ValueError:
        tree[path[-1]] = raw


def parse(argv: list[str]) -> EngineArgs:
    """The parsed contract; exits with status 2 and vLLM's message on an unknown option."""
    parser = _parser()
    ns, unknown = parser.parse_known_args(_dashes(argv))
    if unknown:
        refuse("unrecognized arguments: " + " ".join(unknown))
    given = {
        k: v
        for k, v in vars(ns).items()
        if k != "command" and v is not None and v != parser.get_default(k)
    }
    given["model"] = ns.model
    served = ns.served_model_name[0] if ns.served_model_name else None
    return EngineArgs(
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
        block_size=ns.block_size or 16,
        user_block_size=ns.block_size is not None,
        num_gpu_blocks_override=ns.num_gpu_blocks_override,
        kv_cache_memory_bytes=ns.kv_cache_memory_bytes,
        enable_prefix_caching=ns.enable_prefix_caching is not False,
        speculative_config=ns.speculative_config,
        compilation_config=ns.compilation_config,
        api_keys=tuple(ns.api_key or ()),
        non_default_args=given,
    )
