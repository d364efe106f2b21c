"""The sweep plan as written: one parser and one set of rules for `cockpit bench` and the TUI."""

from __future__ import annotations

import pytest

from cockpit.bench.models import PointSpec, SweepPlan
from cockpit.bench.sweep_plan import context_note, numbers, read_plan, written
from tests.cli_runner import run_cockpit

DEFAULT_TEXTS = {"depths": "0,4K,8K,16K,64K,128K,256K", "concurrency": "1,2", "runs": "3",
                 "pp": "2048", "tg": "32"}  # fmt: skip


def test_sizes_are_written_as_the_cli_takes_them() -> None:
    assert numbers("0, 1K,4096,64k", minimum=0) == (0, 1024, 4096, 65536)
    assert numbers("1,2,", minimum=1) == (1, 2)


@pytest.mark.parametrize(
    ("name", "text", "why"),
    [
        ("depths", "0,abc", "'abc' is not a number (write 4096 or 4K)"),
        ("depths", "-4K", "-4K is below 0"),
        ("depths", "4K,4096", "4K given twice"),
        ("depths", " , ", "give at least one value"),
        ("concurrency", "0,1", "0 is below 1"),
        ("runs", "0", "0 is below 1"),
        ("runs", "three", "'three' is not a number (write 4096 or 4K)"),
        ("pp", " ", "give a number"),
        ("runs", "101", "101 is above 100"),  # a typo that would run for days: refused
        ("depths", "0,32768K", "32768K is above 16384K"),
        ("concurrency", "1,1000", "1000 is above 256"),
        ("tg", "9" * 5000, f"'{'9' * 5000}' is not a number (write 4096 or 4K)"),
    ],
)
def test_a_bad_field_says_why_and_makes_no_plan(name: str, text: str, why: str) -> None:
    plan, errors = read_plan({**DEFAULT_TEXTS, name: text}, cold=False, driver="builtin")
    assert plan is None and errors == {name: why}


def test_defaults_are_the_clis_and_what_is_written_reads_back() -> None:
    plan, errors = read_plan(DEFAULT_TEXTS, cold=False, driver="builtin")
    assert (plan, errors) == (SweepPlan(), {})
    assert SweepPlan().runs == 3 and len(SweepPlan().points) == 14
    edited = SweepPlan((0, 1000, 65536), (1, 2, 4), 512, 64, 5, cold=True, driver="llama-benchy")
    assert written(edited)["depths"] == "0,1000,64K"
    assert read_plan(written(edited), cold=True, driver="llama-benchy") == (edited, {})


def test_a_report_records_only_a_plan_that_makes_its_points() -> None:
    plan = SweepPlan((0, 4096), (1, 2), 512, 8, runs=2, cold=True)
    assert SweepPlan.of(plan.points, 2, "builtin") == plan
    by_hand = (PointSpec(0, 1, 512, 8), PointSpec(4096, 2, 256, 8))
    assert SweepPlan.of(by_hand, 2, "builtin") is None
    assert SweepPlan.of((), 2, "builtin") is None


def test_depths_beyond_the_lanes_context_are_skipped_and_none_left_refuses() -> None:
    assert context_note(SweepPlan(), None) == ("", False)
    assert context_note(SweepPlan(), 32768) == (
        "64K, 128K, 256K skipped: beyond the lane's max-model-len 32768",
        False,
    )
    assert context_note(SweepPlan(depths=(64 * 1024,)), 32768) == (
        "no point fits the lane's max-model-len 32768 (depth + pp + tg)",
        True,
    )
    # depth + pp + tg, as the bench counts it: 30K fits alone, not with a 2048-token prompt
    assert context_note(SweepPlan(depths=(0, 30 * 1024), tg=32), 32768)[0].startswith("30K ")


def test_the_cli_refuses_a_bad_field_in_the_editors_words() -> None:
    result = run_cockpit("bench", "--recipe", "r", "--cluster", "c", "--label", "x",
                         "--depths", "0,abc")  # fmt: skip
    assert result.returncode == 2
    assert "Invalid value for '--depths': 'abc' is not a number (write 4096 or 4K)" in (
        result.stderr
    )
    result = run_cockpit("bench", "--recipe", "r", "--cluster", "c", "--label", "x", "--runs", "0")
    assert result.returncode == 2 and "Invalid value for '--runs': 0 is below 1" in result.stderr
