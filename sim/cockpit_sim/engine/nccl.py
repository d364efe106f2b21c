"""NCCL `NCCL_DEBUG=INFO` init lines of one rank, from the recipe's NCCL env and the node's HCAs.

Transport choice as NCCL makes it: `NCCL_IB_HCA` filters the node's RDMA devices (a leading `=`
means exact names, `^` excludes); with at least one match the rank runs NET/IB over RoCE on the
matches with `NCCL_IB_GID_INDEX`, otherwise it prints `NET/IB : No device found.` and falls back to
NET/Socket on `NCCL_SOCKET_IFNAME`.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

DEFAULT_HCAS = ("rocep1s0f0", "roceP2p1s0f0", "rocep1s0f1", "roceP2p1s0f1")
DEFAULT_SOCKET_IFNAME = "enp1s0f0np0"
NCCL_VERSION = "2.32.3+cuda13.4"


@dataclass(frozen=True)
class Transport:
    network: str
    devices: tuple[str, ...]


def choose_transport(env: Mapping[str, str], node_hcas: Sequence[str]) -> Transport:
    spec = env.get("NCCL_IB_HCA", "").strip()
    if env.get("NCCL_IB_DISABLE") == "1":
        return Transport("Socket", ())
    if not spec:
        return Transport("IB", tuple(node_hcas))
    exclude = spec.startswith("^")
    exact = spec.lstrip("^").startswith("=")
    names = [n.split(":")[0] for n in spec.lstrip("^=").split(",") if n]

    def matches(dev: str) -> bool:
        return any(dev == n if exact else dev.startswith(n) for n in names)

    chosen = tuple(d for d in node_hcas if matches(d) != exclude)
    return Transport("IB", chosen) if chosen else Transport("Socket", ())


def init_lines(
    host: str,
    pid: int,
    rank: int,
    nranks: int,
    env: Mapping[str, str],
    node_hcas: Sequence[str],
    oob_addr: str,
    master: str,
) -> list[str]:
    """Everything one rank prints from `ncclCommInitRank` to `Init COMPLETE`."""
    pre = f"{host}:{pid}:{pid} [0] NCCL INFO "
    ifname = env.get("NCCL_SOCKET_IFNAME", DEFAULT_SOCKET_IFNAME)
    out = [pre + "cudaDriverVersion 13040"]
    if rank == 0:
        out.append(pre + f"NCCL version {NCCL_VERSION}")
    for key in ("NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "NCCL_ALGO"):
        if key in env:
            out.append(pre + f"{key} set by environment to {env[key]}")
    out.append(pre + f"Bootstrap: Using {ifname}:{oob_addr}<0>")
    transport = choose_transport(env, node_hcas)
    if transport.network == "IB":
        for index, dev in enumerate(transport.devices):
            out.append(
                pre + f"NET/IB : Made virtual device [{index}] name={dev} speed=200000 ndevs=1"
            )
        gid = env.get("NCCL_IB_GID_INDEX", "0")
        out.append(pre + f"NET/IB : GID index {gid}, RoCE v2")
        devs = " ".join(f"[{i}]{d}:1/RoCE" for i, d in enumerate(transport.devices))
        out.append(pre + f"NET/IB : Using {devs} [RO]; OOB {ifname}:{oob_addr}<0>")
        out.append(pre + "Using network IB")
        via = "NET/IB/{}"
    else:
        out.append(pre + "NET/IB : No device found.")
        out.append(pre + f"NET/Socket : Using [0]{ifname}:{oob_addr}<0>")
        out.append(pre + "Using network Socket")
        via = "NET/Socket/{}"
    channels = int(env.get("NCCL_MAX_NCHANNELS", env.get("NCCL_MIN_NCHANNELS", "2")))
    if nranks > 1:
        peer = (rank + 1) % nranks
        for ch in range(channels):
            out.append(
                pre
                + f"Channel {ch:02d}/0 : {rank}[0] -> {peer}[0] [send] via "
                + via.format(ch % max(1, len(transport.devices) or 1))
            )
        out.append(pre + "Connected all rings")
    comm = zlib.crc32(f"{host}:{pid}".encode())
    out.append(
        pre + f"ncclCommInitRankConfig comm 0x{comm:x} rank {rank} nranks {nranks} cudaDev 0 "
        f"nvmlDev 0 busId f01000 commId 0x{zlib.crc32(master.encode()):x} - Init COMPLETE"
    )
    out.append(
        pre + f"Init timings - ncclCommInitRankConfig: rank {rank} nranks {nranks} total 0.61 "
        "(kernels 0.18, alloc 0.04, bootstrap 0.09, allgathers 0.02, topo 0.11, graphs 0.01, "
        "connections 0.14, rest 0.02)"
    )
    return out


def stuck_lines(host: str, pid: int) -> list[str]:
    """What a rank prints when its RDMA queue pair cannot be brought up (the NCCL-timeout fault)."""
    return [
        f"{host}:{pid}:{pid} [0] misc/ibvwrap.cc:206 NCCL WARN Call to ibv_modify_qp failed with "
        "error No such device errno 19",
        f"{host}:{pid}:{pid} [0] proxy.cc:1716 NCCL WARN [Proxy Service 0] Failed to execute "
        "operation Connect from rank 1, retcode 3",
    ]


def watchdog_line(rank: int, at: float, timeout_ms: int = 600_000) -> str:
    """torch's ProcessGroupNCCL watchdog message after the collective timeout."""
    stamp = time.strftime("%m%d %H:%M:%S", time.localtime(at)) + f".{int(at % 1 * 1e6):06d}"
    return (
        f"[rank{rank}]:[E{stamp} ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught "
        f"collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, "
        f"NumelOut=1, Timeout(ms)={timeout_ms}) ran for {timeout_ms + 60} milliseconds before "
        "timing out."
    )
