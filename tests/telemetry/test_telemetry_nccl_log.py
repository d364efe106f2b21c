"""NCCL_DEBUG=INFO lines → records (nccl_log), events (nccl_events) and per-rank transport
summaries (nccl_transport)."""

import pytest

from cockpit.telemetry import nccl_events as ev
from cockpit.telemetry import nccl_log as n
from cockpit.telemetry import severity as sev
from cockpit.telemetry.nccl_transport import TransportTracker
from tests.replay import summarize_transport


def test_parse_line_with_prefix_and_source():
    line = "dgx3:36754:36800 [0] misc/ibvwrap.cc:206 NCCL WARN Call to ibv_modify_qp failed x"
    assert n.parse_nccl_line(line) == n.NcclLine(
        line,
        "WARN",
        "Call to ibv_modify_qp failed x",
        "dgx3",
        36754,
        36800,
        0,
        "misc/ibvwrap.cc:206",
    )


@pytest.mark.parametrize(
    "line",
    [
        "NCCL INFO Connected all rings",
        "(Worker_TP1 pid=402) NCCL INFO Connected all rings",
    ],
)
def test_parse_line_without_prefix(line):
    parsed = n.parse_nccl_line(line)
    assert parsed is not None and parsed.host is None and parsed.message == "Connected all rings"


@pytest.mark.parametrize("line", ["", "NCCL version 2.32.3+cuda13.4", "garbage NCCL line", "\x00"])
def test_non_nccl_lines(line):
    assert n.parse_nccl_line(line) is None
    assert ev.parse_nccl_event(line) is None


@pytest.mark.parametrize(
    ("line", "event"),
    [
        (
            "node17-2:36754:36754 [6] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE "
            "[RO]; OOB ens5f0np0:192.168.89.206<0>",
            ev.NetIbDevices(
                (ev.IbDevice(0, "mlx5_0", 1, "RoCE"), ev.IbDevice(1, "mlx5_1", 1, "RoCE")),
                True,
                "ens5f0np0",
                "192.168.89.206",
            ),
        ),
        (
            "h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>",
            ev.NetIbDevices((ev.IbDevice(0, "mlx5_0", 1, "IB"),), False, "ib0", "10.0.0.1"),
        ),
        ("h:1:1 [0] NCCL INFO NET/IB : No device found.", ev.NetIbNoDevice()),
        (
            "h:1:1 [0] NCCL INFO NET/Socket : Using [0]enp1s0f1np1:10.100.216.12<0>",
            ev.NetSocketDevices(("enp1s0f1np1",)),
        ),
        ("h:1:1 [0] NCCL INFO Using network IB", ev.NetworkChosen("IB")),
        ("h:1:1 [0] NCCL INFO Using network Socket", ev.NetworkChosen("Socket")),
        (
            "spark-3995:2981:2981 [0] NCCL INFO NCCL_SOCKET_IFNAME set to enp1s0f1np1",
            ev.EnvSetting("NCCL_SOCKET_IFNAME", "enp1s0f1np1"),
        ),
        (
            "spark-9f8f:315:401 [0] NCCL INFO NCCL_IB_GID_INDEX set by environment to 3.",
            ev.EnvSetting("NCCL_IB_GID_INDEX", "3"),
        ),
        (
            "spark-3995:2981:2981 [0] NCCL INFO NET/IB : Made virtual device [0] name=rocep1s0f1 "
            "speed=200000 ndevs=1",
            ev.VirtualDevice(0, "rocep1s0f1", 200000, 1),
        ),
        (
            "NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0",
            ev.ChannelConnection(0, 0, 1, "send", "NET/IB/0"),
        ),
        ("h:1:1 [0] NCCL INFO Channel 00/02 : 0 1", None),
        ("NCCL INFO Connected all rings", ev.RingsConnected()),
        (
            "h:1:2 [0] NCCL INFO ncclCommInitRankConfig comm 0xaaab1c2d3e40 rank 0 nranks 2 cudaDev"
            " 0 nvmlDev 0 busId f01000 commId 0x5e1b3a9c0d2f4e6a - Init COMPLETE",
            ev.InitComplete(0, 2, 0, 0, "f01000", "0x5e1b3a9c0d2f4e6a"),
        ),
        (
            "h:1:2 [0] NCCL INFO Init timings - ncclCommInitRankConfig: rank 0 nranks 2 total 1.23 "
            "(kernels 0.31, alloc 0.02, bootstrap 0.05, allgathers 0.01, topo 0.40, graphs 0.01, "
            "connections 0.38, rest 0.05)",
            ev.InitTimings(
                0,
                2,
                1.23,
                (
                    ("kernels", 0.31),
                    ("alloc", 0.02),
                    ("bootstrap", 0.05),
                    ("allgathers", 0.01),
                    ("topo", 0.40),
                    ("graphs", 0.01),
                    ("connections", 0.38),
                    ("rest", 0.05),
                ),
            ),
        ),
        (
            "misc/ibvwrap.cc:206 NCCL WARN Call to ibv_modify_qp failed with error No such device "
            "errno 19",
            ev.NcclWarning(
                "Call to ibv_modify_qp failed with error No such device errno 19",
                "misc/ibvwrap.cc:206",
                "ibv",
            ),
        ),
        (
            "h:1:1 [0] NCCL WARN ncclCommInitRankConfig: unhandled system error (run with x)",
            ev.NcclWarning(
                "ncclCommInitRankConfig: unhandled system error (run with x)", None, "system"
            ),
        ),
        (
            "h:1:3 [2] proxy.cc:1716 NCCL WARN [Service thread] Error encountered progressing "
            "operation=Connect, res=3, closing connection",
            ev.NcclWarning(
                "[Service thread] Error encountered progressing operation=Connect, res=3, closing "
                "connection",
                "proxy.cc:1716",
                "connect",
            ),
        ),
        (
            "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12590, "
            "OpType=_ALLGATHER_BASE, NumelIn=1404928, NumelOut=2809856, Timeout(ms)=600000) ran "
            "for 600060 milliseconds before timing out.",
            ev.WatchdogTimeout(
                1,
                12590,
                "_ALLGATHER_BASE",
                600000,
                600060,
                "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12590, "
                "OpType=_ALLGATHER_BASE, NumelIn=1404928, NumelOut=2809856, Timeout(ms)=600000) "
                "ran for 600060 milliseconds before timing out.",
            ),
        ),
    ],
)
def test_parse_event(line, event):
    assert ev.parse_nccl_event(line) == event


def test_roce_summary_per_rank(fixture_text):
    rank0, rank1 = summarize_transport(fixture_text("nccl_roce_tp2.log").splitlines())
    assert (rank0.host, rank0.pid, rank0.rank, rank0.nranks) == ("spark-9f8f", 315, 0, 2)
    assert (rank1.host, rank1.rank) == ("spark-506c", 1)
    for rank in (rank0, rank1):
        assert rank.transport == "RoCE" and rank.problem is None and rank.init_complete
        assert rank.hcas == ("rocep1s0f1", "roceP2p1s0f1") and rank.gid_index == "3"
        assert rank.ib_hca_setting == "rocep1s0f1,roceP2p1s0f1" and rank.warnings == 0
    assert rank0.channels_via == ("NET/IB/0", "NET/IB/1")
    assert rank0.headline == "rank 0/2 RoCE rocep1s0f1,roceP2p1s0f1 gid 3"


def test_socket_fallback_is_a_problem(fixture_text):
    (rank,) = summarize_transport(fixture_text("nccl_socket_fallback.log").splitlines())
    assert (rank.host, rank.rank, rank.transport) == ("dgx2", 1, "Socket")
    assert rank.hcas == () and rank.ib_hca_setting == "rocep9s0f0"
    assert rank.problem is not None and "Socket" in rank.problem
    assert rank.headline == "rank 1/2 Socket enp1s0f1np1"


def test_warnings_and_watchdog_timeout(fixture_text):
    tracker = TransportTracker()
    events = [tracker.feed(line) for line in fixture_text("nccl_errors.log").splitlines()]
    assert sum(isinstance(e, ev.NcclWarning) for e in events) == 3
    (rank,) = tracker.summaries()
    assert rank.warnings == 3 and rank.transport == "RoCE"
    assert rank.timeout is not None and rank.timeout.rank == 3 and rank.rank == 3
    assert rank.problem == "collective timed out (_ALLGATHER_BASE, rank 3)"
    assert rank.headline.endswith("(init pending)")


def test_summary_of_nothing():
    assert summarize_transport(["", "hello", "NCCL INFO something unknown"]) == ()


WARN_2_26 = (  # NCCL >= 2.26 stamps its WARN lines (NCCL_DEBUG_TIMESTAMP_LEVELS defaults to WARN)
    "[2026-10-03 18:20:05] dgx3:36754:36800 [0] misc/ibvwrap.cc:206 NCCL WARN Call to "
    "ibv_modify_qp failed with error No such device errno 19"
)


@pytest.mark.parametrize(
    ("line", "warns"),
    [
        (WARN_2_26, True),
        ("dgx3:36754:36800 [0] NCCL WARN NET/IB : Got async event : port error", True),
        # NCCL's INFO lines that report a failure: its unwinding trace (`file.cc:line -> res`)
        # under the WARN that told it, and a connect it retries itself
        ("dgx3:36754:36800 [0] NCCL INFO transport/net_ib.cc:1024 -> 2", False),
        (
            "dgx3:36754:36800 [0] NCCL INFO Call to connect returned Connection refused, retrying",
            False,
        ),
        # an NCCL record inside a line with a level of its own: the line's level is its severity
        # (NCCL's own level inside it decided the count before)
        (
            "(Worker_TP1 pid=402) WARNING 10-03 18:20:05 [pynccl.py:70] dgx3:36754:36754 [0] "
            "NCCL INFO NET/IB : No device found.",
            True,
        ),
        (
            "(Worker_TP1 pid=402) INFO 10-03 18:20:05 [pynccl.py:70] dgx3:36754:36754 [0] "
            "NCCL WARN NCCL_SOCKET_IFNAME set but not found",
            False,
        ),
    ],
)
def test_an_nccl_warning_is_what_the_log_filter_calls_one(line, warns):
    """The NCCL pane counts a line a warning iff the one classifier (the store's tag, the Log
    pane's colour and level filter) rates it warning or worse."""
    assert (sev.rank(sev.severity(line)) >= sev.rank(sev.WARNING)) is warns
    assert isinstance(ev.parse_nccl_event(line), ev.NcclWarning) is warns
    tracker = TransportTracker()
    tracker.feed(line)
    assert sum(r.warnings for r in tracker.summaries()) == int(warns)
