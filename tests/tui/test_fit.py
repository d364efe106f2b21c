"""Columns and names fitted to a pane's width (pure)."""

from __future__ import annotations

from cockpit.tui.fit import end, fit_columns, lane_key


def test_reasons_lose_their_end() -> None:
    assert end("failed: rank 1 on dgx6 exited (code 1)", 16) == "failed: rank 1 …"
    assert end("serving", 16) == "serving"


def test_spare_room_goes_to_the_flex_column() -> None:
    assert fit_columns([10, 8, 7], [5, 5, 5], 40, shrink_order=[1, 0], flex=2) == [10, 8, 22]


def test_short_of_room_columns_give_up_cells_in_order_down_to_their_floor() -> None:
    widths = fit_columns([30, 14, 20, 19], [18, 10, 16, 12], 70, shrink_order=[3, 0, 1], flex=2)
    assert widths == [24, 14, 20, 12] and sum(widths) == 70
    tight = fit_columns([30, 14, 20, 19], [18, 10, 16, 12], 10, shrink_order=[3, 0, 1], flex=2)
    assert tight == [18, 10, 20, 12]  # floors kept: the table scrolls the rest


def test_a_column_with_floor_zero_is_dropped_whole_and_frees_its_padding() -> None:
    # lane, state, endpoint: the endpoint goes rather than being cut to a stub
    widths = fit_columns([30, 20, 22], [30, 16, 0], 60, shrink_order=[2, 1], flex=1, pad=2)
    assert widths == [30, 26, 0]  # 30+2 + 26+2 = 60: the state took what the endpoint freed


def test_a_lane_key_keeps_its_cluster_and_the_start_of_its_recipe() -> None:
    key = "mimo26-flash-mopd-4x-sparkring@dgx58-switch"
    assert lane_key(key, 34) == "mimo26-flash-mopd-4x…@dgx58-switch"
    assert lane_key(key, 60) == key
    assert lane_key(key, 12) == "mimo26-flas…"  # no room for both: the start
