"""The TUI's history from a team's Prometheus instead of the local store (`[history] source =
"prometheus:URL"`): the same sparkline figures, from the series `cockpit exporter` feeds it.

A team that already runs Prometheus keeps weeks of every cockpit's figures there; the TUI then
reads its `query_range` API (in a thread, as it reads the store) rather than a store that only
holds what this machine saw.
"""

from __future__ import annotations

from collections.abc import Sequence

import httpx

from cockpit.errors import CockpitError
from cockpit.history.past import LANE_SLOTS, NODE_SLOTS, PastFigures, slotted

PREFIX = "prometheus:"
TIMEOUT_S = 10.0


def prometheus_url(source: str) -> str | None:
    """The base URL of a `prometheus:URL` source, None for the local store."""
    return source.removeprefix(PREFIX).rstrip("/") if source.startswith(PREFIX) else None


def label(value: str) -> str:
    """A PromQL string literal: lane and cluster names are operator text."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def queries(lane: tuple[str, str] | None) -> dict[str, str]:
    """PromQL for each series the sparklines draw (the exporter's metric names)."""
    out = {"nodes": "100 * cockpit_node_gpu_utilization_ratio"}
    if lane is not None:
        where = f"lane={label(lane[0])},cluster={label(lane[1])}"
        out |= {
            "kv": f"cockpit_lane_kv_cache_usage_ratio{{{where}}}",
            "gen": f"cockpit_lane_generation_tokens_per_second{{{where}}}",
            "prompt": f"cockpit_lane_prompt_tokens_per_second{{{where}}}",
        }
    return out


def slot_rows(
    values: Sequence[Sequence[object]], start: float, span_s: float, slots: int
) -> list[tuple[int, float | None]]:
    """`query_range` [time, "value"] pairs into (slot, value) rows: the last value of a slot."""
    width = span_s / slots
    rows = []
    for at, value in values:
        try:
            number = float(str(value))
        except ValueError:
            continue
        if number == number:  # NaN: Prometheus' "no value"
            rows.append((min(int((float(str(at)) - start) / width), slots - 1), number))
    return rows


def query_ranges(
    base: str, lane: tuple[str, str] | None, start: float, end: float
) -> dict[str, list[dict]]:
    """Each series' `query_range` result (a thread's call: it waits on HTTP)."""
    results: dict[str, list[dict]] = {}
    with httpx.Client(timeout=TIMEOUT_S) as http:
        for name, promql in queries(lane).items():
            slots = NODE_SLOTS if name == "nodes" else LANE_SLOTS
            params = {"query": promql, "start": start, "end": end, "step": (end - start) / slots}
            try:
                response = http.get(f"{base}/api/v1/query_range", params=params)
                body = response.json()
            except (httpx.HTTPError, ValueError) as exc:
                raise CockpitError(f"Prometheus at {base}: {exc}") from exc
            if body.get("status") != "success":
                raise CockpitError(f"Prometheus at {base}: {body.get('error', response.text)}")
            results[name] = body["data"]["result"]
    return results


def figures(
    results: dict[str, list[dict]],
    lane: tuple[str, str] | None,
    nodes: Sequence[str],
    start: float,
    span_s: float,
) -> PastFigures:
    """The sparklines' figures from `query_ranges`' results. Pure."""

    def series(name: str, slots: int) -> tuple[float, ...]:
        values = [v for r in results.get(name, ()) for v in r.get("values", ())]
        return slotted(slot_rows(values, start, span_s, slots), slots)

    by_node = {r["metric"].get("node"): r.get("values", ()) for r in results.get("nodes", ())}
    return PastFigures(
        span_s,
        lane,
        series("kv", LANE_SLOTS),
        series("gen", LANE_SLOTS),
        series("prompt", LANE_SLOTS),
        {
            n: slotted(slot_rows(by_node.get(n, ()), start, span_s, NODE_SLOTS), NODE_SLOTS)
            for n in nodes
        },
    )


def read_past_prometheus(
    base: str,
    lane: tuple[str, str] | None,
    nodes: Sequence[str],
    now: float,
    span_s: float,
) -> PastFigures:
    """The last `span_s` seconds of the lane's engine and the nodes' GPU utilisation, from the
    Prometheus at `base` (`read_past`'s twin for a `prometheus:URL` source)."""
    start = now - span_s
    return figures(query_ranges(base, lane, start, now), lane, nodes, start, span_s)
