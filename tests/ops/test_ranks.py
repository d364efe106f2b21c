"""The launch's pure judgement of ranks: node timestamps, decisive NCCL lines, blame, stalls."""

from __future__ import annotations

from cockpit.ops.ranks import RankView, blame, docker_time, nccl_failure, split_timestamp, stalled
from cockpit.plan import RankCommand
from cockpit.telemetry.boot import BootPhase

WARN = (
    "dgx7:812:812 [0] misc/ibvwrap.cc:206 NCCL WARN Call to ibv_modify_qp failed with error "
    "No such device errno 19"
)


def view(rank: int, node: str) -> RankView:
    return RankView(RankCommand(node, rank, f"c-r{rank}", ()), started_at=0.0)


def feed(rank: RankView, *lines: str, now: float = 1.0) -> None:
    for line in lines:
        rank.feed(line, now)


def test_docker_timestamps_keep_their_nanoseconds_and_zone() -> None:
    at, text = split_timestamp("2026-10-03T14:56:01.123456789Z INFO:     Started")
    assert text == "INFO:     Started"
    assert (
        at is not None and abs(at - (docker_time("2026-10-03T14:56:01Z") or 0) - 0.123456789) < 1e-6
    )
    assert docker_time("2026-10-03T16:56:01+02:00") == docker_time("2026-10-03T14:56:01Z")
    assert docker_time("0001-01-01T00:00:00Z") is None  # docker's "never finished"
    assert split_timestamp("no stamp here") == (None, "no stamp here")


def test_only_warnings_that_end_ncc_setup_are_decisive() -> None:
    assert nccl_failure(WARN) == WARN
    assert nccl_failure("dgx7:1:1 [0] NCCL WARN NCCL_SOCKET_IFNAME set but not found") is None
    assert nccl_failure("dgx7:1:1 [0] NCCL INFO Call to ibv_modify_qp") is None
    retry = "dgx7:1:1 [0] misc/socket.cc:484 NCCL WARN Call to connect returned Connection refused"
    assert nccl_failure(retry) == retry
    assert nccl_failure(retry + ", retrying") is None


def test_the_earliest_failure_is_the_cause_whatever_arrived_first() -> None:
    victim, culprit, head = view(1, "dgx6"), view(2, "dgx7"), view(0, "dgx5")
    feed(victim, "2026-10-03T14:56:03.500000000Z RuntimeError: [gloo] Connection closed by peer")
    feed(head, "2026-10-03T14:56:02.100000000Z (EngineCore pid=9) ERROR 10-03 14:56:02 "
               "[multiproc_executor.py:230] Worker proc VllmWorker-2 died unexpectedly")  # fmt: skip
    feed(culprit,
         "2026-10-03T14:56:01.900000000Z (Worker_TP2 pid=7) ERROR 10-03 14:56:01 "
         "[multiproc_executor.py:702] WorkerProc failed to start.",
         "2026-10-03T14:56:01.900100000Z safetensors_rust.SafetensorError: Error while "
         "deserializing header: MetadataIncompleteBuffer")  # fmt: skip
    cause, victims = blame([victim, head, culprit])
    assert cause is culprit and "SafetensorError" in cause.decisive()
    assert victims == [head, victim]


def test_a_peers_echo_stamped_first_is_still_a_consequence() -> None:
    """The head's relay stamped its "died unexpectedly" 6 ms before the worker's own traceback."""
    head, culprit = view(0, "dgx1"), view(1, "dgx2")
    feed(head, "2026-10-03T14:56:01.894000000Z (EngineCore pid=9) ERROR 10-03 14:56:01 "
               "[multiproc_executor.py:230] Worker proc VllmWorker-1 died unexpectedly")  # fmt: skip
    feed(culprit, "2026-10-03T14:56:01.900100000Z safetensors_rust.SafetensorError: Error while "
                  "deserializing header: MetadataIncompleteBuffer")  # fmt: skip
    cause, victims = blame([head, culprit])
    assert cause is culprit and victims == [head]
    assert head.echoes_a_peer and not culprit.echoes_a_peer
    alone = view(0, "dgx1")
    feed(alone, "2026-10-03T14:56:01Z RuntimeError: [gloo] Connection closed by peer")
    assert blame([alone]) == (alone, [])  # an echo with no one else to blame is still shown


def test_a_silent_death_is_dated_by_its_container_end() -> None:
    killed, head = view(1, "dgx2"), view(0, "dgx1")
    killed.ended, killed.ended_at, killed.exit_code = True, 100.0, 137
    feed(head, "1970-01-01T00:01:41Z (EngineCore pid=9) ERROR 01-01 00:01:41 [x.py:1] "
               "Worker proc VllmWorker-1 died unexpectedly")  # fmt: skip
    cause, victims = blame([head, killed])
    assert cause is killed and cause.failure() == "exited (exit code 137)" and victims == [head]


def test_a_worker_is_past_nccl_once_init_completes_and_a_warning_fails_it() -> None:
    worker = view(1, "dgx2")
    assert not worker.past_nccl
    feed(worker, "dgx2:5:5 [0] NCCL INFO ncclCommInitRankConfig comm 0x1 rank 1 nranks 2 "
                 "cudaDev 0 nvmlDev 0 busId f01000 commId 0x2 - Init COMPLETE")  # fmt: skip
    assert worker.past_nccl and not worker.failed
    stuck = view(1, "dgx3")
    feed(stuck, WARN)
    assert stuck.failed and stuck.decisive() == WARN and not stuck.past_nccl


def test_a_stall_is_the_serving_head_or_the_rank_furthest_behind() -> None:
    head, worker = view(0, "dgx1"), view(1, "dgx2")
    feed(
        head, "Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01, 1.00s/it]"
    )
    assert head.state.phase is BootPhase.LOADING_WEIGHTS
    assert stalled([head, worker], head_serving=False) is worker
    assert stalled([head, worker], head_serving=True) is head
