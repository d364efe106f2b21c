"""The SQLite store: round trip, two writers at once, migration, retention, refusals."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
from pathlib import Path

import pytest

from cockpit.errors import InputError
from cockpit.history import schema
from cockpit.history.records import (
    BenchRow,
    BootRow,
    LaneSample,
    NodeSample,
    OpRow,
    PhaseSpan,
)
from cockpit.history.settings import retention_days
from cockpit.history.store import HistoryStore, StoreError
from cockpit.history.writer import DAY_S, Writer
from cockpit.settings import DEFAULT_RETENTION_DAYS

NOW = 1_800_000_000.0


def _op(i: int, started: float = NOW, **kw: object) -> OpRow:
    return OpRow(f"op{i}", "launch", "qwen3-0.6b-2x", "2nodes-dac", "ops@pluto", 4242, started,
                 **kw)  # type: ignore[arg-type]  # fmt: skip


def _boot(started: float = NOW) -> BootRow:
    phases = (
        PhaseSpan("dgx1", "loading weights", 12.5),
        PhaseSpan("dgx1", "ready", 1.0),
        PhaseSpan("dgx2", "loading weights", 13.0),
    )
    return BootRow("op1", "qwen3-0.6b-2x", "2nodes-dac", "dgx1", started, started + 15, 14.0,
                   "ok", phases)  # fmt: skip


def _lane(at: float = NOW) -> LaneSample:
    return LaneSample("qwen3-0.6b-2x", "2nodes-dac", at, 10.0, 5, 40.0, 900.0, 0.25, 0.5, 2.0,
                      0.0, 1.0)  # fmt: skip


def _node(at: float = NOW, node: str = "dgx1") -> NodeSample:
    return NodeSample(node, at, 30.0, 6, 88.0, 61.0, 63.0, 95.5, 60_000.0, 122_570.0)


def _bench(created: float = NOW) -> BenchRow:
    return BenchRow("/r/a.json", "qwen3-0.6b-2x", "2nodes-dac", created, "t", "warm prefix",
                    "builtin", "", 2, 0, 0, 40.0, 900.0, 70.0, 4096, 35.0)  # fmt: skip


def test_every_kind_of_row_comes_back_as_written(store: HistoryStore) -> None:
    start = _op(1)
    end = _op(1, nodes=("dgx1", "dgx2"), ended=NOW + 20, outcome="ok", exit_code=0,
              summary="ready after 14.0 s")  # fmt: skip
    store.write([start, _boot(), _lane(), _node(), _bench()])
    assert store.ops(0) == [start]  # written at its start: no outcome yet
    store.write([end])  # and again at its end
    assert store.ops(0) == [end]
    assert store.boots(0) == [_boot()]
    assert store.lane_samples("qwen3-0.6b-2x", 0) == [_lane()]
    assert store.lane_samples("qwen3-0.6b-2x", 0, cluster="other") == []
    assert store.node_samples("dgx1", 0) == [_node()]
    assert store.benches(0) == [_bench()] and store.benches(0, "other") == []
    assert store.ops(NOW + 1) == [] and store.boots(NOW + 1) == []
    assert store.names("lane") == ["qwen3-0.6b-2x"] and store.names("node") == ["dgx1"]


def test_the_store_is_in_wal_mode_with_a_busy_timeout(store: HistoryStore) -> None:
    assert store.conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert store.conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 5000
    assert store.conn.execute("PRAGMA user_version").fetchone() == (schema.VERSION,)


def test_a_bucket_two_cockpits_both_write_is_kept_once(store: HistoryStore) -> None:
    store.write([_lane(), _node()])
    store.write([_lane(), _node()])
    assert (
        len(store.lane_samples("qwen3-0.6b-2x", 0)) == 1 and len(store.node_samples("dgx1", 0)) == 1
    )


ROWS_EACH = 300


def _write_ops(db: str, prefix: str) -> None:
    """One cockpit: its own connection, one transaction per row (the most lock traffic)."""
    store = HistoryStore.open(Path(db))
    try:
        for i in range(ROWS_EACH):
            op = OpRow(f"{prefix}{i}", "stop", "", "", "ops@pluto", 1, NOW + i)
            store.write([op, _node(NOW + 30 * i, node=prefix)])
    finally:
        store.close()


def _process_writer(db: str, prefix: str, go: multiprocessing.synchronize.Event) -> None:
    go.wait()
    _write_ops(db, prefix)


def test_two_processes_writing_at_once_lose_nothing(db: Path) -> None:
    HistoryStore.open(db).close()
    spawn = multiprocessing.get_context("spawn")
    go = spawn.Event()
    workers = [spawn.Process(target=_process_writer, args=(str(db), p, go)) for p in ("a", "b")]
    for worker in workers:
        worker.start()
    go.set()
    for worker in workers:
        worker.join(60)
    assert [w.exitcode for w in workers] == [0, 0]  # a "database is locked" would raise
    store = HistoryStore.open(db)
    try:
        ids = {row.id for row in store.ops(0)}
        assert ids == {f"{p}{i}" for p in "ab" for i in range(ROWS_EACH)}
        assert len(store.node_samples("a", 0)) == len(store.node_samples("b", 0)) == ROWS_EACH
    finally:
        store.close()


def test_two_writer_threads_behind_their_queues_lose_nothing(db: Path) -> None:
    """Two cockpits in one process (a TUI and an exporter): two writers, two connections."""
    writers = [Writer(db, None), Writer(db, None)]
    for i in range(ROWS_EACH):
        for n, writer in enumerate(writers):
            assert writer.put(OpRow(f"w{n}-{i}", "sync", "", "", "ops@pluto", 1, NOW + i))
    for writer in writers:
        writer.close()
        assert writer.problem is None and writer.written == ROWS_EACH
    store = HistoryStore.open(db)
    try:
        assert len(store.ops(0)) == 2 * ROWS_EACH
    finally:
        store.close()


def _v1_store(db: Path) -> None:
    """A store as the first schema left it, with a row in it: the migration's fixture."""
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db)
    conn.executescript(schema.MIGRATIONS[0])
    conn.execute("PRAGMA user_version = 1")
    conn.execute(
        "INSERT INTO ops (id, op, who, pid, started, outcome) "
        "VALUES ('old', 'launch', 'ops@pluto', 1, ?, 'ok')",
        (NOW,),
    )
    conn.commit()
    conn.close()


def test_a_store_of_the_previous_version_is_migrated_and_keeps_its_rows(db: Path) -> None:
    assert schema.VERSION == 2
    _v1_store(db)
    store = HistoryStore.open(db)
    try:
        assert store.conn.execute("PRAGMA user_version").fetchone() == (2,)
        assert [(r.id, r.outcome) for r in store.ops(0)] == [("old", "ok")]
        store.write([_bench()])  # the table version 2 added
        assert store.benches(0) == [_bench()]
    finally:
        store.close()


def test_two_cockpits_opening_an_old_store_at_once_migrate_it_once(db: Path) -> None:
    _v1_store(db)
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def open_it() -> None:
        start.wait()
        try:
            HistoryStore.open(db).close()
        except BaseException as exc:  # "table benches already exists", "database is locked"
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_a_store_written_by_a_newer_cockpit_is_refused_in_one_line(db: Path) -> None:
    _v1_store(db)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(StoreError) as caught:
        HistoryStore.open(db)
    assert str(caught.value).count("\n") == 0
    assert "version 99 is newer than this cockpit's (2)" in str(caught.value)


def test_a_file_that_is_no_database_is_one_line(db: Path) -> None:
    db.parent.mkdir(parents=True)
    db.write_text("not sqlite " * 100)
    with pytest.raises(StoreError, match=r"history store .*history.db: file is not a database"):
        HistoryStore.open(db)


def test_pruning_deletes_only_what_is_older_than_the_cutoff(store: HistoryStore) -> None:
    old, new = NOW - 40 * DAY_S, NOW
    store.write([_op(1, old), _op(2, new), _boot(old), _boot(new), _lane(old), _lane(new),
                 _node(old), _node(new), _bench(old)])  # fmt: skip
    assert store.prune(NOW - 30 * DAY_S) == 5
    assert [r.id for r in store.ops(0)] == ["op2"]
    assert [b.started for b in store.boots(0)] == [new]
    assert store.conn.execute("SELECT COUNT(*) FROM boot_phases").fetchone() == (3,)  # cascade
    assert [s.at for s in store.lane_samples("qwen3-0.6b-2x", 0)] == [new]
    assert [s.at for s in store.node_samples("dgx1", 0)] == [new]
    assert store.benches(0) == []


def test_the_writer_prunes_by_the_retention_setting(db: Path) -> None:
    store = HistoryStore.open(db)
    store.write([_op(1, NOW - 8 * DAY_S), _op(2, NOW - 6 * DAY_S)])
    store.close()
    writer = Writer(db, retention_days=7, clock=lambda: NOW)
    writer.close()
    store = HistoryStore.open(db)
    try:
        assert [r.id for r in store.ops(0)] == ["op2"]
    finally:
        store.close()


def test_a_store_that_cannot_be_opened_drops_rows_and_says_why(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    writer = Writer(blocker / "history.db", None)  # its folder is a file
    writer.close()
    assert writer.put(_op(1)) is False and writer.problem and "history store" in writer.problem


def test_a_full_queue_drops_the_row_rather_than_wait(db: Path) -> None:
    writer = Writer(db, None, queue_max=1)
    puts = [writer.put(_op(i)) for i in range(200)]  # faster than any disk
    writer.close()
    assert puts[0] and not all(puts) and writer.dropped == puts.count(False)
    assert writer.problem is not None and "dropping" in writer.problem


@pytest.mark.parametrize(
    ("text", "days"),
    [(None, DEFAULT_RETENTION_DAYS), ("[history]\nretention_days = 7\n", 7.0),
     ("inventory = \"/srv/inv\"\n[history]\nretention_days = 0\n", None)],
)  # fmt: skip
def test_retention_lives_in_config_toml(
    tmp_path: Path, text: str | None, days: float | None
) -> None:
    path = tmp_path / "config.toml"
    if text is not None:
        path.write_text(text)
    assert retention_days(path) == days


def test_a_misspelt_retention_key_is_one_line_naming_the_right_one(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[history]\nretention_dayz = 7\n")
    with pytest.raises(InputError) as caught:
        retention_days(path)
    assert str(caught.value) == (
        f"{path}:2: history.retention_dayz: unknown key 'retention_dayz' "
        "(did you mean 'retention_days'?)"
    )
