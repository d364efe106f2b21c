"""The process of one rank: boot like vLLM, then serve (rank 0) or follow the head (workers).

Reads the fleet's environment: `COCKPIT_SIM_NODE` (node name), `COCKPIT_SIM_NODE_DIR` (node.json
with HCAs and faults, the per-node compile cache under `cache/`, and `gpu_load.json` which this
process keeps fresh every 0.25 s and removes on exit), `COCKPIT_SIM_SPEED` (engine seconds per
wall second) and `COCKPIT_SIM_BOOT_SPEED` (the same for the boot phases only, default the speed:
tests boot lanes fast and still serve at a measurable pace), and in a real container
`COCKPIT_SIM_HOST_PID` (its pid on the host, which nvidia-smi lists). Every boot and serving
duration is engine time, slept as `duration / speed` (boot: `/ boot_speed`); the log prints
engine time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from cockpit_sim.engine import boot, faults, gpu_load, logs, nccl
from cockpit_sim.engine.args import EngineArgs
from cockpit_sim.engine.calibration import (
    LaneCalibration,
    for_lane,
    model_family,
    with_model_config,
)
from cockpit_sim.engine.core import EngineCore
from cockpit_sim.engine.metrics import EngineMetrics, cache_config_info
from cockpit_sim.engine.rendezvous import HeadLink, WorkerLink
from cockpit_sim.engine.scheduler import Scheduler, SchedulerConfig
from cockpit_sim.engine.server import AccessLogger, ServerContext, api_keys, build_app
from cockpit_sim.engine.stats import LOG_INTERVAL_S
from cockpit_sim.tools.netinfo import address_of

Barrier = Callable[[str], Awaitable[None]]
"""A collective step: returns once every rank of the lane is through `checkpoint` ("nccl":
NCCL init, "ready": the engine's init). A lost peer is noticed by the caller, not here."""

RENDEZVOUS_TIMEOUT_S = 600.0
RENDEZVOUS_MIN_WALL_S = 120.0
"""Ranks are started by the fleet at wall-clock pace: never give up on peers sooner than this."""
NCCL_TIMEOUT_S = 600.0
HANG_HINT_S = 60.0
PUBLISH_EVERY_S = 0.25
_ARCH = {"flash": "MiMoV2ForCausalLM", "pro": "MiMoV2ForCausalLM", "small": "Qwen3ForCausalLM"}


@dataclass
class Rank:
    """Mutable state of this rank's process: who it is, where it prints, what its GPU shows."""

    args: EngineArgs
    env: Mapping[str, str]
    node: str
    node_dir: Path | None
    speed: float
    boot_speed: float
    facts: faults.NodeFacts
    pid: int = field(default_factory=os.getpid)
    gpu_pid: int = 0  # what nvidia-smi lists (the host's pid, in a real container); 0: `pid`
    phase: str = "loading"
    util: float | None = None
    mem_gib: float = 0.0

    @property
    def rank(self) -> int:
        return self.args.node_rank

    def log(self, proc: str, level: str, src: str, msg: str) -> None:
        pid = self.pid + {"APIServer": 0, "EngineCore": 1}.get(proc, 2)
        print(logs.line(proc, pid, level, src, msg, _wall()), flush=True)

    def bare(self, lines: Iterable[str]) -> None:
        for text in lines:
            print(text, flush=True)

    async def sleep(self, engine_s: float) -> None:
        if engine_s > 0:
            await asyncio.sleep(engine_s / self.speed)

    async def boot_sleep(self, engine_s: float) -> None:
        if engine_s > 0:
            await asyncio.sleep(engine_s / self.boot_speed)

    def load_path(self) -> Path | None:
        return self.node_dir / "gpu_load.json" if self.node_dir else None

    def publish(self) -> None:
        path = self.load_path()
        if path is not None:
            sample = gpu_load.sample(
                self.phase, self.util, self.mem_gib, self.gpu_pid or self.pid, _wall()
            )
            gpu_load.publish(path, sample)

    def withdraw(self) -> None:
        """Remove the GPU load this rank published (the process is ending)."""
        path = self.load_path()
        if path is not None:
            gpu_load.withdraw(path)


def _wall() -> float:
    return time.time()


def build_rank(args: EngineArgs, env: Mapping[str, str]) -> Rank:
    node_dir = Path(env["COCKPIT_SIM_NODE_DIR"]) if env.get("COCKPIT_SIM_NODE_DIR") else None
    speed = _speed(env.get("COCKPIT_SIM_SPEED"), 1.0)
    return Rank(
        args=args,
        env=env,
        node=env.get("COCKPIT_SIM_NODE") or os.uname().nodename,
        node_dir=node_dir,
        speed=speed,
        boot_speed=_speed(env.get("COCKPIT_SIM_BOOT_SPEED"), speed),
        facts=faults.read_node(node_dir),
        gpu_pid=int(env.get("COCKPIT_SIM_HOST_PID") or 0),  # set by a real node's GPU hook
    )


def _speed(value: str | None, default: float) -> float:
    speed = float(value or default)
    return speed if speed > 0 else default


def _model_config(path: str) -> dict[str, Any]:
    try:
        data = json.loads((Path(path) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _cache_marker(r: Rank) -> Path | None:
    """Per-node, per-model marker of a finished b12x autotune (the compile cache)."""
    if r.node_dir is None:
        return None
    name = Path(r.args.model.rstrip("/"))
    model = name.parent.parent.name if name.parent.name == "snapshots" else name.name
    return r.node_dir / "cache" / f"b12x-{model}.json"


def make_plan(r: Rank) -> boot.BootPlan:
    family = model_family(r.args.model)
    config = _model_config(r.args.model)
    cal = with_model_config(for_lane(family, r.args.tensor_parallel_size), config)
    kv_gib, kv_tokens = kv_pool(r.args, cal)
    marker = _cache_marker(r)
    archs = config.get("architectures")
    arch = archs[0] if isinstance(archs, list) and archs else _ARCH[family]
    return boot.BootPlan(
        args=r.args,
        cal=cal,
        architecture=str(arch),
        kv_gib=kv_gib,
        kv_tokens=kv_tokens,
        autotune_cached=marker is not None and marker.exists(),
        rank=r.rank,
    )


def kv_pool(a: EngineArgs, cal: LaneCalibration) -> tuple[float, int]:
    """(KV GiB per rank, tokens) as vLLM sizes the pool: `--kv-cache-memory-bytes` when given
    (the memory profile and `--gpu-memory-utilization` skipped), else the auto pool; then
    `--num-gpu-blocks-override` fixes the block count whatever the memory would hold."""
    if a.kv_cache_memory_bytes:
        gib = a.kv_cache_memory_bytes / 2**30
        tokens = a.kv_cache_memory_bytes // cal.kv_bytes_per_token
    else:
        gib, tokens = cal.kv_pool(a.gpu_memory_utilization)
    if a.num_gpu_blocks_override is not None:
        tokens = a.num_gpu_blocks_override * a.block_size
        gib = tokens * cal.kv_bytes_per_token / 2**30
    return gib, tokens - tokens % a.block_size


async def _publisher(r: Rank, link: HeadLink | None) -> None:
    while True:
        r.publish()
        if link is not None:
            link.broadcast({"type": "load", "phase": r.phase, "util": r.util})
        await asyncio.sleep(PUBLISH_EVERY_S)


async def _play(
    r: Rank, events: Iterable[boot.LogEvent], plan: boot.BootPlan, barrier: Barrier | None = None
) -> int | None:
    """Print boot events on time; returns an exit code when a fault ends the boot.

    Each event is due at an absolute time, so the overhead of printing hundreds of lines does not
    add up at high boot speeds. An event marked `ranks_ready` waits for every rank first."""
    due = time.monotonic()
    for event in events:
        due += event.after_s / r.boot_speed
        await asyncio.sleep(max(0.0, due - time.monotonic()))
        if event.checkpoint == "ranks_ready" and barrier is not None:
            await barrier("ready")
            due = max(due, time.monotonic())
        r.phase = event.phase
        if event.checkpoint == "weights" and r.facts.has("weights_crash"):
            shard = int(event.msg.split("|")[1].split("/")[0])
            r.log(plan.worker, "ERROR", "multiproc_executor.py:702", "WorkerProc failed to start.")
            r.bare(faults.weights_traceback(shard, plan.shards))
            return 1
        if event.checkpoint == "kv_alloc" and r.facts.has("kv_oom"):
            r.log(plan.worker, "ERROR", "multiproc_executor.py:702", "WorkerProc failed to start.")
            free = max(0.0, plan.kv_gib) * 0.12
            r.bare(faults.oom_traceback(plan.kv_gib, 119.7, free))
            return 1
        if event.proc is None:
            r.bare([event.msg])
        else:
            r.log(event.proc, event.level, event.src, event.msg)
        if event.mem_gib is not None:
            r.mem_gib = event.mem_gib
        if "autotune: done" in event.msg:
            marker = _cache_marker(r)
            if marker is not None:
                marker.parent.mkdir(parents=True, exist_ok=True)
                marker.write_text(json.dumps({"candidates": plan.cal.autotune_candidates}))
    return None


def _oob_address(r: Rank) -> str:
    """NCCL's bootstrap address: that of NCCL_SOCKET_IFNAME on this node (what `ip` shows
    there), else the address the rank serves or reaches its head on."""
    ifname = r.env.get("NCCL_SOCKET_IFNAME", nccl.DEFAULT_SOCKET_IFNAME).split(",")[0]
    found = address_of(str(r.node_dir), ifname.lstrip("=")) if r.node_dir else None
    if found:
        return found
    return r.args.host if r.rank == 0 or r.args.host != "127.0.0.1" else r.args.master_addr


async def _nccl(r: Rank, plan: boot.BootPlan, barrier: Barrier) -> int | None:
    """NCCL init: a collective, so `Init COMPLETE` waits until every rank is through it (a
    rank whose queue pair cannot come up keeps the others waiting until it dies)."""
    oob = _oob_address(r)
    master = f"{r.args.master_addr}:{r.args.master_port}"
    lines = nccl.init_lines(
        r.node, r.pid + 2, r.rank, r.args.tensor_parallel_size, r.env, r.facts.hcas, oob, master
    )
    if r.facts.has("nccl_timeout"):
        r.bare([ln for ln in lines if "Channel" not in ln and "Init" not in ln])
        r.bare(nccl.stuck_lines(r.node, r.pid + 2))
        await r.boot_sleep(NCCL_TIMEOUT_S)
        r.bare([nccl.watchdog_line(r.rank, _wall())])
        r.log(plan.worker, "ERROR", "multiproc_executor.py:702", "WorkerProc failed to start.")
        r.bare(faults.nccl_timeout_traceback(r.rank))
        return 1
    await r.boot_sleep(boot.NCCL_INIT_S)
    await barrier("nccl")
    r.bare(lines)
    return None


async def run_worker(r: Rank) -> int:
    plan = make_plan(r)
    link = WorkerLink(r.args.master_addr, r.args.master_port, r.rank)
    publisher = asyncio.create_task(_publisher(r, None))
    go = asyncio.Event()
    nccl_passed = asyncio.Event()

    async def barrier(checkpoint: str) -> None:
        link.report(checkpoint)
        if checkpoint == "nccl":
            await nccl_passed.wait()

    def on_message(message: dict[str, Any]) -> None:
        if message.get("type") == "go":
            go.set()
        elif message.get("type") == "passed" and message.get("checkpoint") == "nccl":
            nccl_passed.set()
        elif message.get("type") == "load":
            r.phase = str(message.get("phase", r.phase))
            util = message.get("util")
            r.util = float(util) if isinstance(util, int | float) else None

    try:
        if not await link.connect(_rendezvous_wall(r)):
            r.bare(_connect_timeout(r))
            return 1
        follower = asyncio.create_task(link.follow(on_message))
        await _first(go.wait(), follower)
        if follower.done():
            r.bare(faults.worker_lost_traceback(f"{r.args.master_addr}:{r.args.master_port}"))
            return 1
        for event in boot.rendezvous(plan):
            r.log(event.proc or plan.worker, event.level, event.src, event.msg)
        booting = asyncio.create_task(_boot_worker(r, plan, barrier))
        await _first(booting, follower)
        if booting.done() and booting.result() is not None:
            return booting.result() or 1
        await follower
        booting.cancel()
        r.log(plan.worker, "ERROR", "multiproc_executor.py:671", "Head node went away: "
              "the RPC broadcast queue closed. Shutting down worker.")  # fmt: skip
        r.bare(faults.worker_lost_traceback(f"{r.args.master_addr}:{r.args.master_port}"))
        return 1
    finally:
        publisher.cancel()
        link.close()
        r.withdraw()


async def _boot_to_model(r: Rank, plan: boot.BootPlan, barrier: Barrier) -> int | None:
    """What every rank plays: the divide() check, NCCL init, weights/autotune/KV/graphs (the
    head's engine init ends only once every worker's has)."""
    if not _heads_divide(r, plan):
        return 1
    code = await _nccl(r, plan, barrier)
    if code is not None:
        return code
    return await _play(r, boot.after_nccl(plan, _init_line()), plan, barrier)


async def _boot_worker(r: Rank, plan: boot.BootPlan, barrier: Barrier) -> int | None:
    code = await _boot_to_model(r, plan, barrier)
    if code is None:
        r.phase, r.util = "idle", 0.0
        await barrier("ready")
    return code


def _heads_divide(r: Rank, plan: boot.BootPlan) -> bool:
    """vLLM's `divide()` check at engine build: heads must split evenly over the TP ranks."""
    heads, tp = plan.cal.num_attention_heads, r.args.tensor_parallel_size
    if heads % tp == 0:
        return True
    r.bare(
        [
            "Traceback (most recent call last):",
            '  File "/usr/local/lib/python3.12/dist-packages/vllm/config/parallel.py", line 612, '
            "in verify_with_model_config",
            f"ValueError: Total number of attention heads ({heads}) must be divisible by tensor "
            f"parallel size ({tp}).",
        ]
    )
    return False


def _init_line() -> str:
    return "Initializing model took 0.41 seconds"


async def _first(*aws: Any) -> None:
    tasks = [a if isinstance(a, asyncio.Future) else asyncio.ensure_future(a) for a in aws]
    await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)


def _rendezvous_wall(r: Rank) -> float:
    return max(RENDEZVOUS_TIMEOUT_S / r.speed, RENDEZVOUS_MIN_WALL_S)


def _connect_timeout(r: Rank) -> list[str]:
    ms = int(RENDEZVOUS_TIMEOUT_S * 1000)
    return [
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/torch/distributed/rendezvous.py", '
        "line 189, in _create_c10d_store",
        "    return TCPStore(",
        "torch.distributed.DistNetworkError: The client socket has timed out after "
        f"{ms}ms while trying to connect to ({r.args.master_addr}, {r.args.master_port}).",
    ]


async def run_head(r: Rank, stop: asyncio.Event) -> int:
    plan = make_plan(r)
    expected = max(0, r.args.nnodes - 1)
    link = HeadLink(r.args.master_addr if expected else "127.0.0.1", r.args.master_port, expected)
    publisher = asyncio.create_task(_publisher(r, link))
    runner: web.AppRunner | None = None

    async def barrier(checkpoint: str) -> None:
        await link.wait_all(checkpoint)
        link.broadcast({"type": "passed", "checkpoint": checkpoint})

    try:
        await _play(r, boot.preamble(plan), plan)
        if expected:
            await link.start()
            if not await link.wait_joined(_rendezvous_wall(r)):
                r.bare(_store_timeout(link.joined + 1, r.args.nnodes))
                return 1
            link.broadcast({"type": "go"})
        for event in boot.rendezvous(plan):
            r.log(event.proc or plan.worker, event.level, event.src, event.msg)
        booting = asyncio.create_task(_boot_head(r, plan, barrier))
        await _first(booting, link.lost.wait(), stop.wait())
        if not booting.done():
            booting.cancel()
            return _peer_lost(r, link) if link.lost.is_set() else _shutdown(r)
        if booting.result() is not None:
            return booting.result() or 1
        core, runner = await _serve(r, plan)
        return await _supervise(r, core, link, stop)
    finally:
        publisher.cancel()
        if runner is not None:
            await runner.cleanup()
        await link.close()
        r.withdraw()


async def _boot_head(r: Rank, plan: boot.BootPlan, barrier: Barrier) -> int | None:
    code = await _boot_to_model(r, plan, barrier)
    if code is not None:
        return code
    if plan.kv_tokens < plan.max_model_len:
        r.bare(_kv_too_small(plan))
        return 1
    return await _play(r, boot.serving(plan), plan)


async def _serve(r: Rank, plan: boot.BootPlan) -> tuple[EngineCore, web.AppRunner]:
    a = r.args
    config = SchedulerConfig(
        max_num_seqs=a.max_num_seqs,
        max_num_batched_tokens=a.max_num_batched_tokens,
        block_size=a.block_size,
        num_blocks=plan.kv_tokens // a.block_size,
        num_spec_tokens=a.num_spec_tokens,
        spec_method=a.spec_method,
        graph_max_tokens=a.graph_max_tokens,
        enable_prefix_caching=a.enable_prefix_caching,
    )
    cache_info = cache_config_info(
        block_size=a.block_size,
        user_block_size=a.user_block_size,
        cache_dtype=a.kv_cache_dtype,
        gpu_memory_utilization=a.gpu_memory_utilization,
        enable_prefix_caching=a.enable_prefix_caching,
        num_gpu_blocks=config.num_blocks,
        num_gpu_blocks_override=a.num_gpu_blocks_override,
        kv_cache_memory_bytes=a.kv_cache_memory_bytes,
        max_model_len=plan.max_model_len,
    )
    metrics = EngineMetrics(a.name, cache_info, plan.max_model_len, a.num_spec_tokens)
    core = EngineCore(Scheduler(plan.cal, config), r.speed, metrics)
    ctx = ServerContext(
        args=a,
        core=core,
        max_model_len=plan.max_model_len,
        kv_tokens=plan.kv_tokens,
        kv_gib=plan.kv_gib,
        lane=plan.cal.key,
        created=int(_wall()),
        faults=lambda: faults.read_node(r.node_dir).faults,
        api_keys=api_keys(a, r.env),
    )
    runner = web.AppRunner(
        build_app(ctx),
        access_log_class=AccessLogger,
        handle_signals=False,
        handler_cancellation=True,
        shutdown_timeout=0.5,
    )
    await runner.setup()
    await web.TCPSite(runner, a.host, a.port).start()
    r.bare(
        [
            logs.uvicorn(f"Started server process [{r.pid}]"),
            logs.uvicorn("Waiting for application startup."),
            logs.uvicorn("Application startup complete."),
        ]
    )
    return core, runner


async def _supervise(r: Rank, core: EngineCore, link: HeadLink, stop: asyncio.Event) -> int:
    """Serve until stopped, a worker vanishes, or a serving fault ends the process."""
    core.hung = r.facts.has("hang_after_start")
    tasks = [
        asyncio.create_task(core.run()),
        asyncio.create_task(_stats_ticker(r, core)),
        asyncio.create_task(_follow_core(r, core)),
    ]
    dying = None
    if r.facts.has("exit_traceback"):
        dying = asyncio.create_task(_exit_fault(r, core))
    elif r.facts.has("crash_after_probe"):
        dying = asyncio.create_task(_crash_after_first(r, core))
    if core.hung:
        tasks.append(asyncio.create_task(_hang_hints(r)))
    waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(link.lost.wait())]
    if dying is not None:
        waits.append(dying)
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in [*tasks, *waits]:
            task.cancel()
    if dying is not None and dying.done() and not dying.cancelled():
        return 1
    if link.lost.is_set():
        return _peer_lost(r, link)
    return _shutdown(r)


async def _follow_core(r: Rank, core: EngineCore) -> None:
    while True:
        r.phase, r.util = core.phase, core.util
        await asyncio.sleep(PUBLISH_EVERY_S / 2)


async def _stats_ticker(r: Rank, core: EngineCore) -> None:
    """vLLM's 10 s logging interval in engine time; at most 20 wakeups per wall second (at very
    high speeds a window then spans more engine time; its rates are still per engine second)."""
    while True:
        await asyncio.sleep(max(LOG_INTERVAL_S / r.speed, 0.05))
        s = core.scheduler
        for msg in core.stats.flush(core.now(), len(s.running), len(s.waiting), s.pool.usage):
            r.log("APIServer", "INFO", "loggers.py:257", msg)


async def _hang_hints(r: Rank) -> None:
    while True:
        await r.sleep(HANG_HINT_S)
        r.log(
            "EngineCore",
            "WARNING",
            "shm_broadcast.py:466",
            f"No available shared memory broadcast block found in {HANG_HINT_S:.0f} seconds. "
            "This typically happens when some processes are hanging or doing some "
            "time-consuming work (e.g. compilation, weight/kv cache quantization).",
        )


async def _exit_fault(r: Rank, core: EngineCore) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(core.first_request.wait(), HANG_HINT_S / r.speed)
    await r.sleep(0.5)
    _engine_dead(r)


CRASH_AFTER_FIRST_S = 0.2
"""Wall seconds between the first answered request and the crash of `crash_after_probe`: long
enough for the answer to reach the client whatever the speed."""


async def _crash_after_first(r: Rank, core: EngineCore) -> None:
    await core.first_finished.wait()
    await asyncio.sleep(CRASH_AFTER_FIRST_S)
    _engine_dead(r)


def _engine_dead(r: Rank) -> None:
    r.log("EngineCore", "ERROR", "core.py:961", "EngineCore encountered a fatal error.")
    r.bare(faults.engine_dead_traceback())
    r.log(
        "APIServer",
        "ERROR",
        "async_llm.py:542",
        "AsyncLLM output_handler failed. vllm.v1.engine.exceptions.EngineDeadError: EngineCore "
        "encountered an issue. See stack trace (above) for the root cause.",
    )


def _peer_lost(r: Rank, link: HeadLink) -> int:
    rank = link.lost_rank if link.lost_rank is not None else 1
    r.log(
        "EngineCore",
        "ERROR",
        "multiproc_executor.py:230",
        f"Worker proc VllmWorker-{rank} died unexpectedly, shutting down executor.",
    )
    return 1


def _shutdown(r: Rank) -> int:
    r.log("APIServer", "INFO", "launcher.py:254", "[shutdown] API server: shutdown triggered")
    r.bare([logs.uvicorn("Shutting down"), logs.uvicorn("Application shutdown complete.")])
    return 0


def _store_timeout(joined: int, world: int) -> list[str]:
    return [
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/torch/distributed/rendezvous.py", '
        "line 189, in _create_c10d_store",
        "    return TCPStore(",
        f"torch.distributed.DistStoreError: Timed out after {RENDEZVOUS_TIMEOUT_S + 1:.0f} "
        f"seconds waiting for clients. {joined}/{world} clients joined.",
    ]


def _kv_too_small(plan: boot.BootPlan) -> list[str]:
    """vLLM 0.32's `_check_enough_kv_cache_memory` refusal (GiB figures as its `format_gib`)."""
    per_token = plan.cal.kv_bytes_per_token
    needed = round(plan.max_model_len * per_token / 2**30, 2)
    available = round(max(plan.kv_gib, 0.0), 2)
    if plan.kv_tokens <= 0:
        return [
            *_kv_traceback(),
            "ValueError: No available memory for the cache blocks. Try increasing "
            "`gpu_memory_utilization` when initializing the engine (this flag also controls CPU "
            "memory reservation on the CPU backend, despite its name). See "
            "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.",
        ]
    estimate = (
        f"Based on the available memory, the estimated maximum model length is {plan.kv_tokens}. "
    )
    return [
        *_kv_traceback(),
        f"ValueError: To serve at least one request with the model's max seq len "
        f"({plan.max_model_len}), ({needed} GiB KV cache is needed, which is larger than the "
        f"available KV cache memory ({available} GiB). {estimate}Try increasing "
        "`gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or "
        "decreasing `max_model_len` when initializing the engine. See "
        "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.",
    ]


def _kv_traceback() -> list[str]:
    return [
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/core/kv_cache_utils.py", '
        "line 1030, in _check_enough_kv_cache_memory",
    ]


def main(args: EngineArgs, env: Mapping[str, str]) -> int:
    r = build_rank(args, env)

    async def run() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        if args.headless or args.node_rank > 0:
            worker = asyncio.create_task(run_worker(r))
            await _first(worker, stop.wait())
            if not worker.done():
                worker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await worker
                return 0
            return worker.result()
        return await run_head(r, stop)

    code = asyncio.run(run())
    sys.stdout.flush()
    return code
