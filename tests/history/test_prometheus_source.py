"""The TUI's past from a team's Prometheus (`[history] source = "prometheus:URL"`): the setting,
the PromQL it sends (operator text quoted), and its answers slotted as the store's are."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.errors import InputError
from cockpit.history.past import LANE_SLOTS, NODE_SLOTS
from cockpit.history.prometheus import figures, label, prometheus_url, queries, slot_rows
from cockpit.history.settings import history_table


def test_the_source_is_the_store_or_a_prometheus_url(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    assert history_table(path).source == "store"  # no file
    path.write_text('[history]\nsource = "prometheus:http://127.0.0.1:9090/"\n')
    assert prometheus_url(history_table(path).source) == "http://127.0.0.1:9090"
    assert prometheus_url("store") is None
    path.write_text('inventory = "x"\n\n[history]\nsource = "grafana"\n')
    with pytest.raises(InputError) as caught:
        history_table(path)
    assert "config.toml:4" in str(caught.value) and "history.source" in str(caught.value)


def test_lane_names_are_quoted_in_the_promql() -> None:
    hostile = 'x"} or vector(1) #\\'
    promql = queries((hostile, "c"))["kv"]
    assert label(hostile) == '"x\\"} or vector(1) #\\\\"'  # the quote and backslash escaped
    assert promql == f'cockpit_lane_kv_cache_usage_ratio{{lane={label(hostile)},cluster="c"}}'
    assert set(queries(None)) == {"nodes"}


def test_answers_are_slotted_as_the_stores_are() -> None:
    start, span = 1000.0, 200.0
    results = {
        "kv": [{"metric": {}, "values": [[1000.0, "0.25"], [1190.0, "0.5"], [1195.0, "NaN"]]}],
        "nodes": [{"metric": {"node": "dgx1"}, "values": [[1100.0, "37"]]}],
    }
    past = figures(results, ("l", "c"), ["dgx1", "dgx2"], start, span)
    assert len(past.kv) == LANE_SLOTS and past.kv[0] == 0.25 and past.kv[-1] == 0.5
    assert past.gen == (0.0,) * LANE_SLOTS  # nothing came: zeros, as the store's
    assert past.nodes["dgx1"][NODE_SLOTS // 2] == 37.0 and not any(past.nodes["dgx2"])
    assert slot_rows([[1000.0, "x"]], start, span, 4) == []
