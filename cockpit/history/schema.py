"""The store's tables and the migrations that lead from any earlier version to this one.

`PRAGMA user_version` is the schema version. `MIGRATIONS[i]` takes a store from version i to
i + 1, run inside one `BEGIN IMMEDIATE` transaction with the version bump, so two cockpits
opening an old store at once migrate it once (the second waits, then finds it current). A store
written by a newer cockpit is refused rather than guessed at.
"""

from __future__ import annotations

import sqlite3

from cockpit.errors import CockpitError

V1 = """
CREATE TABLE ops (
    id TEXT PRIMARY KEY,            -- the run, unique across cockpits (uuid4 hex)
    op TEXT NOT NULL,               -- launch, stop, sync, switch, restore, bench
    lane TEXT NOT NULL DEFAULT '',
    cluster TEXT NOT NULL DEFAULT '',
    nodes TEXT NOT NULL DEFAULT '', -- the nodes its events named, comma-separated
    who TEXT NOT NULL,              -- user@host
    pid INTEGER NOT NULL,
    started REAL NOT NULL,          -- Unix seconds
    ended REAL,                     -- NULL: running, or its cockpit died before the end
    outcome TEXT,                   -- ok, refused, failed, cancelled; NULL while running
    exit_code INTEGER,
    summary TEXT NOT NULL DEFAULT ''
);
CREATE INDEX ops_started ON ops (started);
CREATE TABLE boots (
    id INTEGER PRIMARY KEY,
    op_id TEXT NOT NULL,
    lane TEXT NOT NULL,
    cluster TEXT NOT NULL,
    head TEXT NOT NULL DEFAULT '',  -- the node that reached ready (rank 0), '' if none did
    started REAL NOT NULL,
    ended REAL NOT NULL,
    seconds REAL,                   -- to ready, as the ETA counts it; NULL: never ready
    outcome TEXT NOT NULL           -- ok, failed, cancelled
);
CREATE INDEX boots_started ON boots (started);
CREATE TABLE boot_phases (
    boot_id INTEGER NOT NULL REFERENCES boots (id) ON DELETE CASCADE,
    node TEXT NOT NULL,
    seq INTEGER NOT NULL,           -- order of the phase on that node
    phase TEXT NOT NULL,            -- the boot tracker's phase ("loading weights", ...)
    seconds REAL NOT NULL,
    PRIMARY KEY (boot_id, node, seq)
) WITHOUT ROWID;
CREATE TABLE lane_samples (
    lane TEXT NOT NULL,
    cluster TEXT NOT NULL,
    at REAL NOT NULL,               -- the bucket's start, a multiple of its span
    span_s REAL NOT NULL,
    n INTEGER NOT NULL,             -- scrapes in the bucket
    gen_tps REAL,
    prompt_tps REAL,
    kv_usage REAL,
    kv_usage_max REAL,
    running REAL,
    waiting REAL,
    waiting_max REAL,
    PRIMARY KEY (lane, cluster, at)
) WITHOUT ROWID;
CREATE INDEX lane_samples_at ON lane_samples (at);
CREATE TABLE node_samples (
    node TEXT NOT NULL,
    at REAL NOT NULL,
    span_s REAL NOT NULL,
    n INTEGER NOT NULL,
    gpu_util REAL,
    temp_c REAL,
    temp_max_c REAL,
    power_w REAL,
    mem_used_mib REAL,
    mem_total_mib REAL,
    PRIMARY KEY (node, at)
) WITHOUT ROWID;
CREATE INDEX node_samples_at ON node_samples (at);
"""

V2 = """
CREATE TABLE benches (
    path TEXT PRIMARY KEY,          -- the report's JSON file, absolute
    lane TEXT NOT NULL,
    cluster TEXT NOT NULL,
    created REAL NOT NULL,          -- the report's own creation stamp, Unix seconds
    label TEXT NOT NULL,
    mode TEXT NOT NULL,             -- warm prefix, cold, mixed
    driver TEXT NOT NULL,
    partial TEXT NOT NULL DEFAULT '', -- why the sweep stopped early; '' for a whole one
    points INTEGER NOT NULL,        -- measured points
    flagged INTEGER NOT NULL,       -- points with an honesty flag
    depth INTEGER,                  -- the shallowest measured depth: the headline's
    tg_c1 REAL,
    pp_c1 REAL,
    tg_c2 REAL,
    deep INTEGER,                   -- the deepest measured depth
    tg_c1_deep REAL
);
CREATE INDEX benches_created ON benches (created);
"""

MIGRATIONS: tuple[str, ...] = (V1, V2)
VERSION = len(MIGRATIONS)


class NewerStore(CockpitError):
    """The file was written by a newer cockpit: reading it as ours would misread it."""


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the store to `VERSION`; returns the version it had. `conn` is in autocommit mode
    (isolation_level None), so the transaction here is the only one."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = conn.execute("PRAGMA user_version").fetchone()[0]
        if found > VERSION:
            raise NewerStore(
                f"schema version {found} is newer than this cockpit's ({VERSION}): "
                "upgrade the cockpit, or move the file aside"
            )
        for script in MIGRATIONS[found:]:
            for statement in _statements(script):
                conn.execute(statement)
        if found != VERSION:
            conn.execute(f"PRAGMA user_version = {VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return found


def _statements(script: str) -> list[str]:
    """A script's statements: `executescript` would commit the open transaction first."""
    lines = [line.split("--", 1)[0] for line in script.splitlines()]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]
