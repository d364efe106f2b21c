"""`cockpit history`: each subcommand in each format, and its one-line refusals (exit 2)."""

from __future__ import annotations

import csv
import io
import json
import time
from pathlib import Path

import pytest

from cockpit.history.records import BenchRow, BootRow, LaneSample, NodeSample, OpRow, PhaseSpan
from cockpit.history.store import HistoryStore
from tests.cli_runner import run_cockpit

NOW = time.time()
LANE, CLUSTER = "qwen3-0.6b-2x", "2nodes-dac"


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A state dir whose store holds one row of each kind, plus an op of last month."""
    folder = tmp_path_factory.mktemp("state")
    store = HistoryStore.open(folder / "history.db")
    try:
        store.write([
            OpRow("a", "launch", LANE, CLUSTER, "ops@pluto", 1, NOW - 600, ("dgx1", "dgx2"),
                  NOW - 580, "ok", 0, "qwen3-0.6b-2x ready, after 14.0 s"),
            OpRow("b", "stop", LANE, "", "ops@pluto", 1, NOW - 60, ("dgx1",), NOW - 59,
                  "refused", 2, "held by ops@mars since 08:00"),
            OpRow("old", "sync", LANE, CLUSTER, "ops@pluto", 1, NOW - 40 * 86400),
            BootRow("a", LANE, CLUSTER, "dgx1", NOW - 595, NOW - 581, 14.0, "ok",
                    (PhaseSpan("dgx1", "loading weights", 9.0), PhaseSpan("dgx1", "ready", 30.0),
                     PhaseSpan("dgx2", "starting", 2.0))),
            LaneSample(LANE, CLUSTER, NOW - 300, 10.0, 5, 40.0, 900.0, 0.25, 0.5, 2.0, 0.0, 1.0),
            NodeSample("dgx1", NOW - 300, 30.0, 6, 88.0, 61.0, 63.0, 95.5, 61_440.0, 122_880.0),
            BenchRow("/r/b.json", LANE, CLUSTER, NOW - 200, "nightly", "warm prefix", "builtin",
                     "", 2, 0, 0, 40.0, 900.0, 70.0, 0, 40.0),
        ])  # fmt: skip
    finally:
        store.close()
    return folder


def history(state: Path, *args: str):
    return run_cockpit("history", *args, env={"COCKPIT_STATE_DIR": str(state)})


def test_ops_as_a_table(state: Path) -> None:
    done = history(state, "ops")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["started", "op", "lane", "cluster", "nodes", "who", "outcome",
                                "seconds", "summary"]  # fmt: skip
    assert "launch" in lines[1] and "ok" in lines[1] and "dgx1,dgx2" in lines[1]
    assert "refused" in lines[2] and "held by ops@mars" in lines[2]
    assert "sync" not in done.stdout  # last month's: before the default --since 7d


def test_ops_as_json_with_utc_times(state: Path) -> None:
    done = history(state, "ops", "--format", "json", "--since", "60d")
    rows = json.loads(done.stdout)
    assert [r["op"] for r in rows] == ["sync", "launch", "stop"]
    assert rows[1]["seconds"] == 20.0 and rows[1]["outcome"] == "ok"
    assert rows[1]["started_at"].endswith("Z") and rows[0]["outcome"] == "unfinished"
    assert rows[0]["seconds"] is None  # no end was written


def test_ops_as_csv_quotes_what_needs_it(state: Path) -> None:
    done = history(state, "ops", "--format", "csv", "--since", "1h")
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert [r["op"] for r in rows] == ["launch", "stop"]
    assert (
        rows[0]["nodes"] == "dgx1,dgx2"
        and rows[0]["summary"] == "qwen3-0.6b-2x ready, after 14.0 s"
    )
    assert rows[1]["seconds"] == "1.0"


def test_boots_give_the_heads_phases_and_every_nodes_in_json(state: Path) -> None:
    table = history(state, "boots")
    assert table.returncode == 0 and "loading weights 9s" in table.stdout
    assert "starting 2s" not in table.stdout  # dgx2's: not the head's
    assert "ready 30s" not in table.stdout  # the head's phases add up to the boot's 14 s
    (boot,) = json.loads(history(state, "boots", "--format", "json").stdout)
    assert boot["seconds"] == 14.0 and boot["head"] == "dgx1"
    assert boot["phases"] == [
        {"node": "dgx1", "phase": "loading weights", "seconds": 9.0},
        {"node": "dgx1", "phase": "ready", "seconds": 30.0},
        {"node": "dgx2", "phase": "starting", "seconds": 2.0},
    ]
    rows = list(csv.DictReader(io.StringIO(history(state, "boots", "--format", "csv").stdout)))
    assert rows[0]["phases"] == "loading weights 9s"


def test_a_lanes_figures_in_each_format(state: Path) -> None:
    (row,) = json.loads(history(state, "lane", LANE, "--format", "json").stdout)
    assert row["gen_tps"] == 40.0 and row["kv_pct"] == 25.0 and row["kv_max_pct"] == 50.0
    assert row["cluster"] == CLUSTER and row["scrapes"] == 5
    (row,) = csv.DictReader(io.StringIO(history(state, "lane", f"{LANE}@{CLUSTER}", "--format",
                                                "csv").stdout))  # fmt: skip
    assert row["prompt_tps"] == "900.0"
    table = history(state, "lane", LANE)
    assert table.returncode == 0 and "40.0" in table.stdout and "900.0" in table.stdout
    assert history(state, "lane", LANE, "--since", "1m").stdout.count("\n") == 1  # header only


def test_a_nodes_figures(state: Path) -> None:
    (row,) = json.loads(history(state, "node", "dgx1", "--format", "json").stdout)
    assert (row["gpu_pct"], row["temp_max_c"], row["mem_used_gib"]) == (88.0, 63.0, 60.0)


def test_benches(state: Path) -> None:
    (row,) = json.loads(history(state, "benches", "--format", "json").stdout)
    assert (row["label"], row["tg_c1"], row["tg_c2"], row["path"]) == (
        "nightly", 40.0, 70.0, "/r/b.json",
    )  # fmt: skip
    assert "nightly" in history(state, "benches").stdout


def test_a_figure_not_measured_is_a_dash_in_a_table(state: Path) -> None:
    header, row = history(state, "benches").stdout.splitlines()
    at = header.index("partial")  # a blank cell read as its neighbour: `tg_c2 0`
    assert row[at:].split()[0] == "-" and row[header.index("tg_c2") :].split()[0] == "70.0"
    (csv_row,) = csv.DictReader(io.StringIO(history(state, "benches", "--format", "csv").stdout))
    assert csv_row["partial"] == ""


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("lane", "qwen3-0.6b"), "error: no history of lane 'qwen3-0.6b' (did you mean 'qwen3-0.6b-2x'?)"),
        (("lane", LANE, "--cluster", "2nodes-dca"),
         "error: no history of cluster '2nodes-dca' (did you mean '2nodes-dac'?)"),
        (("node", "dgx9"), "error: no history of node 'dgx9' (did you mean 'dgx1'?)"),
        (("ops", "--since", "yesterday"),
         "error: --since 'yesterday': give a duration such as 2h, 1d or 1h30m, or a time such as "
         "2026-12-04 or 2026-12-04T08:00Z"),
        (("ops", "--since", "0001-01-01"),
         "error: --since '0001-01-01': give a duration such as 2h, 1d or 1h30m, or a time such "
         "as 2026-12-04 or 2026-12-04T08:00Z"),  # a time before any clock: was a traceback
        (("opz",), "error: no command 'history opz'; did you mean 'history ops'?"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(state: Path, args: tuple[str, ...], line: str) -> None:
    done = history(state, *args)
    assert (done.returncode, done.stderr.splitlines(), done.stdout) == (2, [line], "")


def test_an_empty_store_prints_an_empty_table_and_says_which_figures_it_lacks(
    tmp_path: Path,
) -> None:
    assert json.loads(history(tmp_path, "ops", "--format", "json").stdout) == []
    done = history(tmp_path, "lane", LANE)
    assert done.stderr == f"error: no history of lane '{LANE}' (it has no lane figures yet)\n"
