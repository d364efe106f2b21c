"""A snapshot's figures as the history records them: each engine's at its last scrape, each live
node's at its last probe. Pure; the TUI and the exporter hand these to the history's recorder."""

from __future__ import annotations

from cockpit.history.downsample import Reading
from cockpit.tui.state.views import FleetSnapshot, NodeHealth


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
