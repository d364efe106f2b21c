"""The exporter's shell: the TUI's poller, feed and store on asyncio, a snapshot published every
second, and prometheus_client's HTTP server (its own thread) serving the latest one.

The store is touched only on the event loop; the server thread reads nothing but the immutable
snapshot the loop last published, so a scrape answers at once even when a node hangs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, start_http_server

from cockpit.bench.artifacts import parse_report
from cockpit.config import Inventory
from cockpit.exporter.families import (
    BenchHeadline,
    ExportSnapshot,
    SnapshotCollector,
    bench_headlines,
)
from cockpit.ssh import SshPool
from cockpit.status.model import fleet_status
from cockpit.status.poller import FleetPoller
from cockpit.status.probe import Pace
from cockpit.tui.feeds.fleet import FleetFeed
from cockpit.tui.state.readings import lane_readings, node_readings
from cockpit.tui.state.store import Store

if TYPE_CHECKING:
    from cockpit.history.recorder import Recorder

PUBLISH_S = 1.0
BENCH_EVERY_S = 30.0  # reports change when a bench ends: minutes apart


def read_headlines(reports_dir: Path) -> tuple[BenchHeadline, ...]:
    """The newest report's points per lane; a file that is not a report is passed over."""
    reports = []
    for path in sorted(reports_dir.glob("*.json")) if reports_dir.is_dir() else ():
        with contextlib.suppress(OSError, ValueError):
            reports.append(parse_report(json.loads(path.read_text(encoding="utf-8"))))
    return bench_headlines(reports)


@contextlib.contextmanager
def serving(host: str, port: int, collector: SnapshotCollector) -> Iterator[int]:
    """prometheus_client's server (OpenMetrics text when the scraper asks for it, as Prometheus
    does) on `host:port` for as long as the block runs; yields the bound port (`port` 0: any)."""
    registry = CollectorRegistry()
    registry.register(collector)
    server, thread = start_http_server(port, addr=host, registry=registry)
    try:
        yield server.server_port
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


async def export(
    inventory: Inventory,
    pool: SshPool,
    collector: SnapshotCollector,
    reports_dir: Path,
    pace: Pace | None = None,
    publish_s: float = PUBLISH_S,
    recorder: Recorder | None = None,
) -> None:
    """Follow the fleet and publish a snapshot into `collector` every `publish_s`, until
    cancelled; the `recorder`, when given, keeps each snapshot's figures in the history."""
    pace = pace or Pace()
    store = Store(inventory)
    loop = asyncio.get_running_loop()
    async with FleetPoller(pool, list(inventory.nodes), pace) as poller:
        feed = FleetFeed(inventory, pool, pace, poller=poller)

        async def fold() -> None:
            async for batch in feed.batches():
                store.apply_all(batch)

        folding = asyncio.create_task(fold())
        bench: tuple[BenchHeadline, ...] = ()
        bench_at = -math.inf
        try:
            while True:
                if folding.done():
                    folding.result()  # the feed failed: say why rather than serve a frozen fleet
                if loop.time() - bench_at >= BENCH_EVERY_S:
                    bench = await asyncio.to_thread(read_headlines, reports_dir)
                    bench_at = loop.time()
                now = time.time()
                nodes = fleet_status(poller.links(), poller.facts(), (), now, pace.stale_after_s)
                fleet = store.snapshot(now)
                collector.latest = ExportSnapshot(nodes.rows, fleet, bench, nodes.operations)
                if recorder is not None:
                    recorder.sample(lane_readings(fleet), node_readings(fleet), now)
                await asyncio.sleep(publish_s)
        finally:
            folding.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await folding
