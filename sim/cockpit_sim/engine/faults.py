"""Per-node faults of the simulated engine, switched on in `$COCKPIT_SIM_NODE_DIR/node.json`.

    {"hcas": ["rocep1s0f0", "roceP2p1s0f0"], "faults": {"kv_oom": true}}

Fault names (each prints what the real failure prints, then behaves like it):

- `weights_crash`: a checkpoint shard fails to deserialize at ~40 % of weight loading; the rank
  prints the safetensors traceback and exits 1.
- `nccl_timeout`: the rank's RDMA queue pair cannot be brought up at NCCL init; it prints the NCCL
  WARN lines, stalls for the 600 s collective timeout (engine time), prints torch's watchdog
  timeout and a DistBackendError traceback, and exits 1 (its peers see the rank vanish and fail).
- `kv_oom`: the KV cache allocation raises torch.OutOfMemoryError (traceback, exit 1).
- `hang_after_start`: the engine finishes booting, then its step loop stops: requests are accepted
  and `/health` stays 200 but no token is ever produced; every 60 s of engine time it logs vLLM's
  "No available shared memory broadcast block found" hint and the GPU shows 100 % at low power.
- `bursty_stream` (read at each request, so it can be switched on a serving lane): SSE streams
  as a busy host sends them, in bursts of several chunks per write, fewer chunks than tokens, and
  empty-text chunks that carry token ids (see `server`).
- `exit_traceback`: once serving, the engine core dies on its first request (or 60 s of engine time
  after startup when no request comes): EngineCore traceback, EngineDeadError, exit 1.
- `crash_after_probe`: the head serves its first request to the end (a launch's one-token probe
  passes), then its engine core dies a moment later (0.2 s): the same traceback, exit 1.

A missing or unreadable file means all four HCAs of a Spark and no fault.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from cockpit_sim.engine.nccl import DEFAULT_HCAS

FAULTS = (
    "weights_crash",
    "nccl_timeout",
    "kv_oom",
    "hang_after_start",
    "exit_traceback",
    "crash_after_probe",
    "bursty_stream",
)


@dataclass(frozen=True)
class NodeFacts:
    hcas: tuple[str, ...] = DEFAULT_HCAS
    faults: frozenset[str] = frozenset()

    def has(self, fault: str) -> bool:
        return fault in self.faults


def read_node(node_dir: Path | None) -> NodeFacts:
    if node_dir is None:
        return NodeFacts()
    try:
        data = json.loads((node_dir / "node.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return NodeFacts()
    if not isinstance(data, dict):
        return NodeFacts()
    hcas = data.get("hcas")
    faults = data.get("faults") or {}
    enabled = {name for name, on in faults.items() if on} if isinstance(faults, dict) else set()
    return NodeFacts(
        hcas=tuple(hcas) if isinstance(hcas, list) else DEFAULT_HCAS,
        faults=frozenset(enabled & set(FAULTS)),
    )


def weights_traceback(shard: int, total: int) -> list[str]:
    name = f"model-{shard:05d}-of-{total:05d}.safetensors"
    return [
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/model_loader/'
        'weight_utils.py", line 771, in safetensors_weights_iterator',
        '    with safe_open(st_file, framework="pt") as f:',
        "         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f"safetensors_rust.SafetensorError: Error while deserializing header: "
        f"MetadataIncompleteBuffer ({name})",
    ]


def oom_traceback(want_gib: float, total_gib: float, free_gib: float) -> list[str]:
    return [
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", '
        "line 4410, in _allocate_kv_cache_tensors",
        "    tensor = torch.zeros(kv_cache_tensor.size, dtype=torch.int8, device=self.device)",
        "             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {want_gib:.2f} GiB. "
        f"GPU 0 has a total capacity of {total_gib:.2f} GiB of which {free_gib:.2f} GiB is free. "
        "Including non-PyTorch memory, this process has 98.71 GiB memory in use. Of the allocated "
        "memory 96.02 GiB is allocated by PyTorch, and 1.37 GiB is reserved by PyTorch but "
        "unallocated.",
    ]


def nccl_timeout_traceback(rank: int) -> list[str]:
    return [
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/distributed/parallel_state.py", '
        "line 1197, in init_distributed_environment",
        "    torch.distributed.barrier()",
        f"torch.distributed.DistBackendError: [Rank {rank}] NCCL watchdog thread terminated with "
        "exception: [Rank 0] Watchdog caught collective operation timeout",
    ]


def engine_dead_traceback() -> list[str]:
    return [
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 953, in '
        "run_engine_core",
        "    engine_core.run_busy_loop()",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/executor/multiproc_executor.py", '
        "line 301, in collective_rpc",
        "    raise RuntimeError(f\"Worker failed with error '{e}'\")",
        "RuntimeError: Worker failed with error 'CUDA error: an illegal memory access was "
        "encountered'",
    ]


def worker_lost_traceback(master: str) -> list[str]:
    """What a worker prints when the head's socket closes under it."""
    return [
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/executor/multiproc_executor.py", '
        "line 642, in worker_busy_loop",
        "    method, args, kwargs, output_rank = self.rpc_broadcast_mq.dequeue()",
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:538] Connection closed by "
        f"peer [{master}]",
    ]
