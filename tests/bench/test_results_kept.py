"""A finished sweep's results are always written, and the bench says where (issue 31): a label
of any length or character makes a bounded, safe file name; a reports folder that cannot take
the report sends it to the fallback folder, printed; the `.json` that `report show` reads is
printed on a line of its own, after the table's last row."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.bench.artifacts import LABEL_MAX, load_report, safe_label
from cockpit_sim.engine.text import TOKENIZER_DIR
from tests.cli_runner import Ran, run_main

TINY = ("--depths", "0", "--concurrency", "1", "--runs", "1", "--pp", "64", "--tg", "16")


def test_a_long_label_is_cut_and_told_apart_by_a_hash() -> None:
    assert safe_label("sparkring-honest-baseline") == "sparkring-honest-baseline"
    assert safe_label("a b/../c") == "a-b-..-c"
    one, two = safe_label("x" * 300), safe_label("x" * 299 + "y")
    assert len(one) == len(two) == LABEL_MAX and one != two
    assert one == safe_label("x" * 300), "the same label names the same file"
    assert len(safe_label("é" * 500).encode()) <= LABEL_MAX


def _bench(url: str, label: str, reports: Path, capsys: pytest.CaptureFixture[str]) -> Ran:
    ran = run_main("bench", "--endpoint", url, "--tokenizer", TOKENIZER_DIR, "--label", label,
                   "--reports", reports, *TINY, capsys=capsys)  # fmt: skip
    assert "Traceback" not in ran.stdout + ran.stderr, ran
    return ran


def _printed(ran: Ran, word: str) -> Path:
    lines = [line for line in ran.stdout.splitlines() if line.startswith(f"{word}: ")]
    assert len(lines) == 1, ran.stdout
    return Path(lines[0].removeprefix(f"{word}: ").split(" (")[0])


def test_a_300_character_label_keeps_the_results(
    flash_lane: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reports = tmp_path / "reports"
    ran = _bench(flash_lane, "honest-baseline-" * 19, reports, capsys)
    record = _printed(ran, "record")
    assert record.parent == reports and record.suffix == ".json", ran.stdout
    assert len(record.name.encode()) < 255
    assert load_report(record).points, "the measured points are in the record"
    assert _printed(ran, "report") == record.with_suffix(".md")
    (row,) = [line for line in ran.stdout.splitlines() if line.startswith("d0 ")]
    assert "pp64" not in row and "report" not in row, "what follows the table joined its last row"


def test_a_folder_that_cannot_take_the_report_sends_it_to_the_fallback(
    flash_lane: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COCKPIT_STATE_DIR", str(tmp_path / "state"))
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder\n")
    ran = _bench(flash_lane, "fallback", blocked / "reports", capsys)
    record = _printed(ran, "record")
    assert record.parent == tmp_path / "state" / "reports", ran.stdout
    assert load_report(record).points
    assert (
        f"warning: {blocked / 'reports'} could not take the report: it is in {record.parent}"
        in ran.stdout.splitlines()
    )
