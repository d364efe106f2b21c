"""The boot sequence of one rank as timed log events (pure): what vLLM prints, when, in which phase.

The shell (`runtime`) sleeps `after_s / speed` before each event, prints it (formatting the
timestamp at print time), publishes the GPU phase, and consults the node's faults at the
`checkpoint` events ("weights", "kv_alloc"; the head's "ranks_ready", the end of its engine
init, waits for every worker's init first). Durations come from the lane calibration:
a first boot of a MiMo lane spends most of its time in the 394-candidate b12x autotune; a second
boot of the same model on the same node (compile cache present) skips it.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

from cockpit.plan.memory_fit import GB10_MEMORY_GIB
from cockpit_sim.engine import logs
from cockpit_sim.engine.args import EngineArgs
from cockpit_sim.engine.calibration import LaneCalibration

NCCL_INIT_S = 1.2
"""Engine seconds from the process-group line to NCCL's `Init COMPLETE` (all ranks joined)."""
_TILES = ("128x64x128", "128x128x64", "64x128x128", "256x64x64", "128x256x64", "64x64x256")
GB10_FREE_GIB = GB10_MEMORY_GIB - 1.6
"""Free device memory at start as a GB10 reports it (the OS and the driver hold the rest)."""
_KERNELS = ("mxfp4_moe_gemm", "mxfp8_dense_gemm", "moe_align_block", "fused_act_quant")


@dataclass(frozen=True)
class LogEvent:
    """A line printed `after_s` engine seconds after the previous event; `proc` None: bare."""

    after_s: float
    phase: str
    msg: str
    proc: str | None = None
    src: str = ""
    level: str = "INFO"
    checkpoint: str | None = None
    mem_gib: float | None = None


@dataclass(frozen=True)
class BootPlan:
    args: EngineArgs
    cal: LaneCalibration
    architecture: str
    kv_gib: float
    kv_tokens: int
    autotune_cached: bool
    rank: int

    @property
    def worker(self) -> str:
        return f"Worker_TP{self.rank}"

    @property
    def shards(self) -> int:
        total = self.cal.weights_gib_per_rank * self.args.tensor_parallel_size
        return max(1, math.ceil(total / 4.6))

    @property
    def max_model_len(self) -> int:
        return self.args.max_model_len or self.cal.max_position_embeddings


def preamble(plan: BootPlan) -> list[LogEvent]:
    """Rank 0's API server banner, arguments and model config (before the rendezvous)."""
    a = plan.args
    banner = [
        "",
        "       █     █     █▄   ▄█",
        f" ▄▄ ▄█ █     █     █ ▀▄▀ █  version {logs.VLLM_VERSION}",
        f"  █▄█▀ █     █     █     █  model   {a.model}",
        "   ▀▀  ▀▀▀▀▀ ▀▀▀▀▀ ▀     ▀",
        "",
    ]
    events = [LogEvent(0.0, "loading", m, "APIServer", "api_utils.py:347") for m in banner]
    events += [
        LogEvent(0.0, "loading", f"non-default args: {a.non_default_args}", "APIServer",
                 "api_utils.py:286"),
        LogEvent(1.2, "loading", f"Resolved architecture: {plan.architecture}", "APIServer",
                 "model.py:733"),
        LogEvent(0.0, "loading", f"Using max model len {plan.max_model_len}", "APIServer",
                 "model.py:2152"),
        LogEvent(1.1, "loading", _engine_config(plan), "EngineCore", "core.py:133"),
        LogEvent(
            0.1, "loading",
            f"DP group leader: node_rank=0, node_rank_within_dp=0, master_addr={a.master_addr}, "
            f"mq_connect_ip={a.master_addr} (local), world_size={a.tensor_parallel_size}, "
            f"local_world_size=1",
            "EngineCore", "multiproc_executor.py:153",
        ),
    ]  # fmt: skip
    return events


def _engine_config(plan: BootPlan) -> str:
    a = plan.args
    spec = a.speculative_config or None
    return (
        f"Initializing a V1 LLM engine (v{logs.VLLM_VERSION}) with config: model='{a.model}', "
        f"speculative_config={spec}, tokenizer='{a.model}', skip_tokenizer_init=False, "
        f"tokenizer_mode=auto, trust_remote_code=True, dtype=torch.bfloat16, "
        f"max_seq_len={plan.max_model_len}, tensor_parallel_size={a.tensor_parallel_size}, "
        f"pipeline_parallel_size=1, data_parallel_size=1, kv_cache_dtype={a.kv_cache_dtype}, "
        f"device_config=cuda, served_model_name={a.name}, "
        f"enable_prefix_caching={a.enable_prefix_caching}, enable_chunked_prefill=True, "
        f"compilation_config={a.compilation_config}"
    )


def rendezvous(plan: BootPlan) -> list[LogEvent]:
    """The worker's process-group line, printed before NCCL init."""
    a = plan.args
    return [
        LogEvent(
            0.4, "loading",
            f"world_size={a.tensor_parallel_size} rank={plan.rank} local_rank=0 "
            f"distributed_init_method=tcp://{a.master_addr}:{a.master_port} backend=nccl",
            plan.worker, "parallel_state.py:1906",
        )
    ]  # fmt: skip


def after_nccl(plan: BootPlan, first_boot_line: str) -> list[LogEvent]:
    """From the parallel-state assignment to the end of engine init (every rank)."""
    a, cal, w = plan.args, plan.cal, plan.worker
    events = [
        LogEvent(
            0.3, "loading",
            f"rank {plan.rank} in world size {a.tensor_parallel_size} is assigned as DP rank 0, "
            f"PP rank 0, PCP rank 0, TP rank {plan.rank}, EP rank N/A, EPLB rank N/A",
            w, "parallel_state.py:2350",
        ),
        LogEvent(0.2, "loading", f"Starting to load model {a.model}...", w,
                 "gpu_model_runner.py:2870"),
        LogEvent(0.5, "loading", first_boot_line, w, "base_loader.py:82"),
    ]  # fmt: skip
    per_shard = cal.weights_load_s / plan.shards
    events.append(LogEvent(0.0, "loading", logs.shards_bar(0, plan.shards, 0.0, per_shard)))
    for done in range(1, plan.shards + 1):
        check = "weights" if done == max(1, int(plan.shards * 0.4)) else None
        events.append(
            LogEvent(
                per_shard, "loading",
                logs.shards_bar(done, plan.shards, done * per_shard, per_shard),
                checkpoint=check, mem_gib=cal.weights_gib_per_rank * done / plan.shards,
            )
        )  # fmt: skip
    events += [
        LogEvent(0.1, "loading", f"Loading weights took {cal.weights_load_s:.2f} seconds", w,
                 "default_loader.py:501"),
        LogEvent(
            0.4, "loading",
            f"Model loading took {cal.weights_gib_per_rank:.4f} GiB memory and "
            f"{cal.weights_load_s + 1.4:.6f} seconds",
            w, "gpu_model_runner.py:2932",
        ),
    ]  # fmt: skip
    events += _autotune(plan)
    events += _profile_and_capture(plan)
    return events


def _autotune(plan: BootPlan) -> list[LogEvent]:
    cal, w = plan.cal, plan.worker
    n = cal.autotune_candidates
    if n == 0:
        return []
    if plan.autotune_cached:
        return [
            LogEvent(0.6, "autotune", f"[b12x] autotune: selection cache hit, {n} candidates "
                     "skipped", w, "b12x_autotune.py:61")
        ]  # fmt: skip
    per = cal.autotune_s / n
    events = []
    for i in range(1, n + 1):
        detail = (
            f"{_KERNELS[i % len(_KERNELS)]} tile={_TILES[i % len(_TILES)]} "
            f"stages={3 + i % 3} split_k={1 << (i % 3)}"
        )
        events.append(
            LogEvent(per, "autotune", f"[b12x] autotune: candidate {i}/{n} ({detail})", w,
                     "b12x_autotune.py:88")
        )  # fmt: skip
    events.append(
        LogEvent(0.2, "autotune", f"[b12x] autotune: done, {n} candidates in "
                 f"{cal.autotune_s:.1f} s", w, "b12x_autotune.py:141")
    )  # fmt: skip
    return events


def compile_cache_dir(plan: BootPlan) -> str:
    """vLLM's per-model, per-rank torch.compile cache folder (the hash stands for the config)."""
    key = f"{plan.args.model}|{plan.args.tensor_parallel_size}|{plan.args.compilation_config}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:10]
    return f"~/.cache/vllm/torch_compile_cache/{digest}/rank_{plan.rank}_0/backbone"


def _torch_compile(plan: BootPlan, seconds: float) -> list[LogEvent]:
    """vLLM's torch.compile of the backbone in the memory profile run (`[backbone]` lines of
    compilation/monitor.py, backends.py, decorators.py): a first boot traces and compiles, a boot
    with the compile cache of the model on the node loads the AOT artifact."""
    w, tag, folder = plan.worker, "[backbone] ", compile_cache_dir(plan)
    if plan.autotune_cached:
        return [
            LogEvent(0.1, "capture", f"{tag}Directly load AOT compilation from path "
                     f"{folder}/model", w, "decorators.py:319"),
            LogEvent(seconds - 0.1, "capture", f"{tag}torch.compile took {seconds - 0.1:.2f} s "
                     "in total", w, "monitor.py:62"),
        ]  # fmt: skip
    dynamo, graph = seconds * 0.3, seconds * 0.65
    budget = plan.args.max_num_batched_tokens
    return [
        LogEvent(0.0, "capture", f"{tag}Starting torch.compile", w, "monitor.py:40"),
        LogEvent(0.1, "capture", f"{tag}Using cache directory: {folder} for vLLM's torch.compile",
                 w, "backends.py:1104"),
        LogEvent(dynamo, "capture", f"{tag}Dynamo bytecode transform time: {dynamo:.2f} s", w,
                 "backends.py:1166"),
        LogEvent(graph, "capture", f"{tag}Compiling a graph for compile range (1, {budget}) "
                 f"takes {graph:.2f} s", w, "backends.py:398"),
        LogEvent(0.0, "capture", f"{tag}torch.compile took {dynamo + graph + 0.1:.2f} s in total",
                 w, "monitor.py:62"),
        LogEvent(seconds - dynamo - graph - 0.1, "capture",
                 f"{tag}saved AOT compiled function to {folder}/model", w, "decorators.py:743"),
    ]  # fmt: skip


def _profile_and_capture(plan: BootPlan) -> list[LogEvent]:
    a, cal, w = plan.args, plan.cal, plan.worker
    used = cal.weights_gib_per_rank + cal.activation_gib
    warmup = cal.profile_s * 0.2
    events = _torch_compile(plan, cal.profile_s * 0.6)
    events.append(
        LogEvent(warmup, "capture", f"[backbone] Initial profiling/warmup run took {warmup:.2f} s",
                 w, "monitor.py:91"),
    )  # fmt: skip
    if a.kv_cache_memory_bytes:
        events.append(
            LogEvent(0.0, "capture",
                     f"Initial free memory {GB10_FREE_GIB:.2f} GiB, reserved {plan.kv_gib:.2f} GiB "
                     "memory for KV Cache as specified by kv_cache_memory_bytes config and skipped "
                     "memory profiling. This does not respect the gpu_memory_utilization config. "
                     "Only use kv_cache_memory_bytes config when you want manual control of KV "
                     "cache memory size. If OOM'ed, check the difference of initial free memory "
                     "between the current run and the previous run where kv_cache_memory_bytes is "
                     "suggested and update it correspondingly.", w, "gpu_worker.py:670"),
        )  # fmt: skip
    events.append(
        LogEvent(cal.profile_s * 0.2, "capture",
                 f"Available KV cache memory: {plan.kv_gib:.2f} GiB", w, "gpu_worker.py:759",
                 checkpoint="kv_alloc", mem_gib=used + max(plan.kv_gib, 0.0)),
    )  # fmt: skip
    if plan.rank == 0:
        override = a.num_gpu_blocks_override
        if override is not None:
            auto = int(cal.kv_pool(a.gpu_memory_utilization)[1] // a.block_size)
            events.append(
                LogEvent(0.0, "capture", f"Overriding num_gpu_blocks={auto} with "
                         f"num_gpu_blocks_override={override}", "EngineCore",
                         "kv_cache_utils.py:2619"),
            )  # fmt: skip
        concurrency = plan.kv_tokens / plan.max_model_len
        events.append(
            LogEvent(0.1, "capture", f"GPU KV cache size: {plan.kv_tokens:,} tokens, Maximum "
                     f"concurrency for {plan.max_model_len:,} tokens per request: "
                     f"{concurrency:.2f}x", "EngineCore", "kv_cache_utils.py:2327"),
        )  # fmt: skip
        sizes = a.compilation_config.get("cudagraph_capture_sizes")
        count = len(sizes) if isinstance(sizes, list) and sizes else 51
        for label, share in (("mixed prefill-decode, PIECEWISE", 0.6), ("decode, FULL", 0.4)):
            seconds = cal.graph_capture_s * share
            for done in (0, count // 2, count):
                events.append(
                    LogEvent(seconds / 2 if done else 0.0, "capture",
                             logs.tqdm_bar(f"Capturing CUDA graphs ({label})", done, count,
                                           seconds * done / count, seconds / count))
                )  # fmt: skip
    capture_wait = 0.3 if plan.rank == 0 else cal.graph_capture_s + 0.3
    events.append(
        LogEvent(capture_wait, "capture",
                 f"Graph capturing finished in {cal.graph_capture_s:.0f} secs, took 1.84 GiB", w,
                 "gpu_model_runner.py:3876")
    )  # fmt: skip
    if plan.rank == 0:
        total = cal.weights_load_s + cal.profile_s + cal.graph_capture_s + 3.1
        if not plan.autotune_cached:
            total += cal.autotune_s
        events.append(
            LogEvent(0.5, "idle",
                     f"init engine (profile, create kv cache, warmup model) took {total:.2f} "
                     "seconds", "EngineCore", "core.py:402", checkpoint="ranks_ready")
        )  # fmt: skip
    return events


def serving(plan: BootPlan) -> list[LogEvent]:
    """Rank 0's API server lines up to the bind (uvicorn's lines follow once the port is open)."""
    a = plan.args
    events = [
        LogEvent(0.4, "idle", "Supported tasks: ['generate']", "APIServer", "entry.py:136"),
        LogEvent(0.0, "idle", f"Starting vLLM server on http://{a.host}:{a.port}",
                 "APIServer", "entry.py:140"),
        LogEvent(0.0, "idle", "Available routes are:", "APIServer", "launcher.py:186"),
    ]  # fmt: skip
    for route, methods in (
        ("/health", "GET"),
        ("/version", "GET"),
        ("/metrics", "GET"),
        ("/tokenize", "POST"),
        ("/detokenize", "POST"),
        ("/v1/models", "GET"),
        ("/v1/chat/completions", "POST"),
        ("/v1/completions", "POST"),
        ("/v1/sparkring/status/view", "GET"),
    ):
        events.append(
            LogEvent(0.0, "idle", f"Route: {route}, Methods: {methods}", "APIServer",
                     "launcher.py:195")
        )  # fmt: skip
    return events


def boot_seconds(plan: BootPlan) -> float:
    """Engine seconds rank 0 takes from start to serving (without waiting for peers)."""
    events = [*preamble(plan), *rendezvous(plan), *after_nccl(plan, ""), *serving(plan)]
    return NCCL_INIT_S + sum(e.after_s for e in events)
