"""One severity per log line, on real lines: vLLM 0.32's own log (`vllm-0.32-cpu/serve.log`, a
copy of shared/reference's capture), NCCL and torch lines as `formats.md` quotes them, tracebacks
and torch's out-of-memory error as Python and torch print them."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.telemetry.severity import ERROR, WARNING, Severity, rank, severity

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "telemetry"
OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total "
    "capacity of 119.70 GiB of which 12.31 GiB is free. Including non-PyTorch memory, this process "
    "has 98.71 GiB memory in use."
)


@pytest.mark.parametrize(
    ("line", "level"),
    [
        (OOM, ERROR),  # the bug: painted red, yet hidden by the "error" filter
        (f"(EngineCore_DP0 pid=287) ERROR 10-03 09:31:15 [core.py:708] {OOM}", ERROR),
        ("Traceback (most recent call last):", ERROR),
        ('  File "/usr/lib/python3.12/multiprocessing/process.py", line 314, in _bootstrap', None),
        ("RuntimeError: Engine core initialization failed. See root cause above.", ERROR),
        (
            "(EngineCore_DP0 pid=287) ERROR 10-03 09:31:15 [core.py:708]   File "
            '"/usr/local/lib/python3.12/dist-packages/vllm/v1/core/kv_cache_utils.py", line 687',
            ERROR,
        ),
        (
            "misc/ibvwrap.cc:206 NCCL WARN Call to ibv_modify_qp failed with error No such device errno 19",
            WARNING,
        ),
        (
            "proxy.cc:1716 NCCL WARN [Service thread] Error encountered progressing operation=Connect, res=3",
            WARNING,
        ),
        (
            "node17-2:36754:36754 [6] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB ens5f0np0:192.168.89.206<0>",
            None,
        ),
        ("spark-3995:2981:2981 [0] NCCL INFO NCCL_SOCKET_IFNAME set to enp1s0f1np1", None),
        # NCCL >= 2.26 stamps its WARN lines; its INFO lines that tell of a failure (the unwinding
        # trace under a WARN, a connect it retries) are INFO
        (
            "[2026-10-03 18:20:05] dgx3:36754:36800 [0] misc/ibvwrap.cc:206 NCCL WARN Call to ibv_modify_qp failed with error No such device errno 19",
            WARNING,
        ),
        ("dgx3:36754:36800 [0] NCCL INFO transport/net_ib.cc:1024 -> 2", None),
        (
            "dgx3:36754:36800 [0] NCCL INFO Call to connect returned Connection refused, retrying",
            None,
        ),
        (
            "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12590, OpType=_ALLGATHER_BASE, NumelIn=1404928, NumelOut=2809856, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.",
            ERROR,
        ),
        (
            "[rank3]:[E1003 18:20:05.512218437 ProcessGroupNCCL.cpp:685] [Rank 3] Watchdog caught collective operation timeout",
            ERROR,
        ),
        # a word in the message is not the line's level
        (
            "(APIServer pid=11958) WARNING 11-29 19:05:30 [system_utils.py:255] Found ulimit of 20000 and failed to automatically increase with error current limit exceeds maximum limit. This can cause fd limit errors like `OSError: [Errno 24] Too many open files`.",
            WARNING,
        ),
        ("(Worker pid=1) INFO 11-29 19:05:39 [utils.py:1] NCCL_DEBUG=WARN, Error budget: 0", None),
        ('INFO:     127.0.0.1:53918 - "GET /metrics HTTP/1.1" 200 OK', None),
        ("INFO:     Application startup complete.", None),
        ("nanobind: leaked 64 types!", None),
    ],
)
def test_a_line_has_one_severity(line: str, level: Severity | None) -> None:
    assert severity(line) == level


def test_a_clean_vllm_run_has_warnings_and_no_error() -> None:
    """vLLM's WARNING lines, torch's c10 `[W…] Warning:` and Python's DeprecationWarning,
    FutureWarning and UserWarning lines are warnings; nothing of a clean run is an error."""
    lines = (FIXTURES / "vllm-0.32-cpu" / "serve.log").read_text().splitlines()
    levels = [severity(line) for line in lines]
    assert ERROR not in levels
    warnings = [line for line, level in zip(lines, levels, strict=True) if level == WARNING]
    assert len(warnings) == 20
    assert sum(" WARNING " in line for line in warnings) == 13
    assert sum("Warning: " in line for line in warnings) == 7  # 6 of Python's, 1 of torch's c10
    assert not [line for line in lines if " WARNING " in line and severity(line) != WARNING]


def test_a_vllm_traceback_is_an_error_from_its_first_line_to_its_last() -> None:
    lines = (FIXTURES / "vllm_boot_kv_oom.log").read_text().splitlines()
    logged = [line for line in lines if ") ERROR " in line]
    assert len(logged) == 5 and {severity(line) for line in logged} == {ERROR}


def test_the_rank_orders_the_filter() -> None:
    assert [rank(None), rank(WARNING), rank(ERROR)] == [1, 2, 3]
