"""Between the snapshots and the history store. Pure.

Out: a snapshot's figures as the history records them (each engine's at its last scrape, each
live node's at its last probe), which the TUI and the exporter hand to the recorder. In: the
figures the store kept over a span, put in place of the session's sparkline series.
"""

from __future__ import annotations

from dataclasses import replace

from cockpit.history.downsample import Reading
from cockpit.history.past import PastFigures
from cockpit.tui.state.views import FleetSnapshot, NodeHealth, lane_key


def lane_readings(snap: FleetSnapshot) -> list[Reading]:
    """One reading per lane with an engine, at its scrape's time (the same scrape twice is the
    same reading: the downsampler counts it once)."""
    found = []
    for lane in snap.lanes:
        engine = snap.engines.get(lane.key)
        if engine is None:
            continue
        values = {
            "gen_tps": engine.gen_tps,
            "prompt_tps": engine.prompt_tps,
            "kv_usage": engine.kv_usage,
            "running": engine.running,
            "waiting": engine.waiting,
        }
        found.append(Reading((lane.lane, lane.cluster), engine.at, values))
    return found


def node_readings(snap: FleetSnapshot) -> list[Reading]:
    """One reading per LIVE node (a stale node's values are old ones, a down node has none)."""
    found = []
    for node in snap.nodes:
        if node.health is not NodeHealth.LIVE or node.age_s is None:
            continue
        gpu, memory = node.gpu, node.memory
        values = {
            "gpu_util": gpu.utilization_pct if gpu else None,
            "temp_c": gpu.temperature_c if gpu else None,
            "power_w": gpu.power_w if gpu else None,
            "mem_used_mib": memory.used_mib if memory else None,
            "mem_total_mib": memory.total_mib if memory else None,
        }
        found.append(Reading((node.name,), round(snap.at - node.age_s, 3), values))
    return found


def with_past(snap: FleetSnapshot, past: PastFigures) -> FleetSnapshot:
    """`snap` whose KV, generation and prompt series (of the lane `past` was read for) and
    nodes' utilisation series are the store's over `past.span_s`; every current figure stays."""
    engines = snap.engines
    key = lane_key(*past.lane) if past.lane else None
    if key is not None and key in engines:
        engine = replace(
            engines[key], kv_history=past.kv, gen_history=past.gen, prompt_history=past.prompt
        )
        engines = {**engines, key: engine}
    nodes = tuple(
        replace(node, util_history=past.nodes[node.name]) if node.name in past.nodes else node
        for node in snap.nodes
    )
    return replace(snap, engines=engines, nodes=nodes)
