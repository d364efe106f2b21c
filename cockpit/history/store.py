"""The SQLite file: opened in WAL mode with a busy timeout, migrated, written in batches, read.

SQLite because it is in the standard library and needs no server: a cockpit on a laptop keeps
weeks of history in one file, and two cockpits (a TUI and a CLI launch, or an exporter) share it.
WAL lets readers go on while one writer commits; every write is a `BEGIN IMMEDIATE` transaction
(the write lock taken up front, waited for up to the busy timeout) because a deferred one that
starts by reading can fail at once with "database is locked" when it must upgrade. Sample rows
are keyed by their bucket, so two cockpits watching one fleet store each bucket once.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import astuple, fields
from pathlib import Path

from cockpit.errors import CockpitError
from cockpit.history.records import (
    BenchRow,
    BootRow,
    LaneSample,
    NodeSample,
    OpRow,
    PhaseSpan,
    Row,
)
from cockpit.history.schema import NewerStore, migrate
from cockpit.paths import state_dir

DB_FILE = "history.db"
BUSY_TIMEOUT_S = 10.0


def default_path() -> Path:
    """`history.db` beside `boot-history.json`: `$COCKPIT_STATE_DIR`, else the user state dir."""
    return state_dir() / DB_FILE


class StoreError(CockpitError):
    """The history file cannot be opened or written (not a database, unwritable folder)."""


def _columns(kind: type) -> list[str]:
    return [f.name for f in fields(kind) if f.name != "phases"]


def _upsert(table: str, kind: type, key: Sequence[str], ignore: bool = False) -> str:
    names = _columns(kind)
    marks = ", ".join("?" for _ in names)
    head = (
        f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks}) ON CONFLICT ({', '.join(key)})"
    )
    if ignore:
        return f"{head} DO NOTHING"
    updates = ", ".join(f"{n} = excluded.{n}" for n in names if n not in key)
    return f"{head} DO UPDATE SET {updates}"


OP_SQL = _upsert("ops", OpRow, ["id"])
LANE_SQL = _upsert("lane_samples", LaneSample, ["lane", "cluster", "at"], ignore=True)
NODE_SQL = _upsert("node_samples", NodeSample, ["node", "at"], ignore=True)
BENCH_SQL = _upsert("benches", BenchRow, ["path"])
BOOT_SQL = (
    "INSERT INTO boots (op_id, lane, cluster, head, started, ended, seconds, outcome) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
PHASE_SQL = "INSERT INTO boot_phases (boot_id, node, seq, phase, seconds) VALUES (?, ?, ?, ?, ?)"
PRUNED = {  # table → the column its age is read from
    "ops": "started",
    "boots": "started",
    "lane_samples": "at",
    "node_samples": "at",
    "benches": "created",
}


def _wal(conn: sqlite3.Connection) -> None:
    """WAL mode, which stays with the file once set. Setting it takes the file for itself and
    SQLite answers "database is locked" at once, busy timeout or not, while another connection
    has it open (two cockpits creating the store together): so it is retried for as long."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


class HistoryStore:
    """One connection to the file; not shared between threads (the writer opens its own)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    @classmethod
    def open(cls, path: Path | None = None) -> HistoryStore:
        """Open (creating it and its folder when missing) and migrate the store."""
        path = path or default_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"history store {path}: {exc}") from None
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            _wal(conn)
            conn.execute("PRAGMA synchronous = NORMAL")  # with WAL: a crash loses no commit
            conn.execute("PRAGMA foreign_keys = ON")
            migrate(conn)
        except (sqlite3.Error, NewerStore) as exc:
            conn.close()
            raise StoreError(f"history store {path}: {exc}") from None
        except BaseException:
            conn.close()
            raise
        return cls(conn)

    def close(self) -> None:
        self.conn.close()

    def write(self, rows: Iterable[Row]) -> None:
        """Every row in one transaction (one fsync for a batch, not one per row)."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            for row in rows:
                match row:
                    case OpRow():
                        values = astuple(row)
                        conn.execute(OP_SQL, (*values[:7], ",".join(row.nodes), *values[8:]))
                    case LaneSample():
                        conn.execute(LANE_SQL, astuple(row))
                    case NodeSample():
                        conn.execute(NODE_SQL, astuple(row))
                    case BenchRow():
                        conn.execute(BENCH_SQL, astuple(row))
                    case BootRow():
                        self._boot(row)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _boot(self, row: BootRow) -> None:
        values = astuple(row)[:-1]  # all but the phases
        boot_id = self.conn.execute(BOOT_SQL, values).lastrowid
        seqs: dict[str, int] = {}
        for span in row.phases:
            seq = seqs[span.node] = seqs.get(span.node, -1) + 1
            self.conn.execute(PHASE_SQL, (boot_id, span.node, seq, span.phase, span.seconds))

    def prune(self, before: float) -> int:
        """Delete every row older than `before` (Unix seconds); returns how many went."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            gone = sum(
                conn.execute(f"DELETE FROM {table} WHERE {column} < ?", (before,)).rowcount
                for table, column in PRUNED.items()
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return gone

    # ---------------------------------------------------------------- reading

    def ops(self, since: float) -> list[OpRow]:
        rows = self.conn.execute(
            f"SELECT {', '.join(_columns(OpRow))} FROM ops WHERE started >= ? ORDER BY started, id",
            (since,),
        ).fetchall()
        return [_op(row) for row in rows]

    def boots(self, since: float, lane: str | None = None) -> list[BootRow]:
        sql = (
            "SELECT id, op_id, lane, cluster, head, started, ended, seconds, outcome FROM boots "
            "WHERE started >= ?" + (" AND lane = ?" if lane else "") + " ORDER BY started, id"
        )
        found = self.conn.execute(sql, (since, lane) if lane else (since,)).fetchall()
        phases: dict[int, list[PhaseSpan]] = {}
        for boot_id, node, phase, seconds in self.conn.execute(
            "SELECT boot_id, node, phase, seconds FROM boot_phases WHERE boot_id IN "
            "(SELECT id FROM boots WHERE started >= ?) ORDER BY boot_id, node, seq",
            (since,),
        ):
            phases.setdefault(boot_id, []).append(PhaseSpan(node, phase, seconds))
        return [BootRow(*row[1:], phases=tuple(phases.get(row[0], ()))) for row in found]

    def lane_samples(self, lane: str, since: float, cluster: str | None = None) -> list[LaneSample]:
        sql = (
            f"SELECT {', '.join(_columns(LaneSample))} FROM lane_samples "
            "WHERE lane = ? AND at >= ?" + (" AND cluster = ?" if cluster else "") + " ORDER BY at"
        )
        args = (lane, since, cluster) if cluster else (lane, since)
        return [LaneSample(*row) for row in self.conn.execute(sql, args)]

    def node_samples(self, node: str, since: float) -> list[NodeSample]:
        sql = (
            f"SELECT {', '.join(_columns(NodeSample))} FROM node_samples "
            "WHERE node = ? AND at >= ? ORDER BY at"
        )
        return [NodeSample(*row) for row in self.conn.execute(sql, (node, since))]

    def benches(self, since: float, lane: str | None = None) -> list[BenchRow]:
        sql = (
            f"SELECT {', '.join(_columns(BenchRow))} FROM benches WHERE created >= ?"
            + (" AND lane = ?" if lane else "")
            + " ORDER BY created, path"
        )
        return [
            BenchRow(*row) for row in self.conn.execute(sql, (since, lane) if lane else (since,))
        ]

    def lane_series(
        self, lane: str, cluster: str, start: float, end: float, slots: int
    ) -> dict[str, list[tuple[int, float | None]]]:
        """The lane's KV use and tok/s averaged per slot of [start, end) (aggregated here: a
        day of 10 s rows is 8,640 of them)."""
        rows = self.conn.execute(
            "SELECT CAST((at - ?) * ? / ? AS INTEGER) AS slot, AVG(kv_usage), AVG(gen_tps), "
            "AVG(prompt_tps) FROM lane_samples WHERE lane = ? AND cluster = ? AND at >= ? "
            "AND at < ? GROUP BY slot",
            (start, slots, end - start, lane, cluster, start, end),
        ).fetchall()
        names = ("kv_usage", "gen_tps", "prompt_tps")
        return {name: [(row[0], row[i]) for row in rows] for i, name in enumerate(names, 1)}

    def node_series(
        self, start: float, end: float, slots: int
    ) -> dict[str, list[tuple[int, float | None]]]:
        """Every node's GPU utilisation averaged per slot of [start, end)."""
        found: dict[str, list[tuple[int, float | None]]] = {}
        for node, slot, util in self.conn.execute(
            "SELECT node, CAST((at - ?) * ? / ? AS INTEGER) AS slot, AVG(gpu_util) "
            "FROM node_samples WHERE at >= ? AND at < ? GROUP BY node, slot",
            (start, slots, end - start, start, end),
        ):
            found.setdefault(node, []).append((slot, util))
        return found

    def names(self, kind: str) -> list[str]:
        """Every lane (`lane`), cluster or node (`node`) the store has figures of."""
        table = {"lane": "lane_samples", "cluster": "lane_samples", "node": "node_samples"}[kind]
        rows = self.conn.execute(f"SELECT DISTINCT {kind} FROM {table} ORDER BY {kind}")
        return [name for (name,) in rows]


def _op(row: tuple[object, ...]) -> OpRow:
    nodes = str(row[7])
    return OpRow(*row[:7], tuple(nodes.split(",")) if nodes else (), *row[8:])  # type: ignore[arg-type]
