"""A real Prometheus (Debian's `prometheus` 2.42) scrapes `cockpit exporter` on loopback; PromQL
returns what the exporter served: a simulated node's GPU figures and a serving lane's state."""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from cockpit.config import load_inventory
from cockpit.exporter.families import SnapshotCollector
from cockpit.exporter.serve import export, serving
from cockpit.history.prometheus import query_ranges
from cockpit.ops.context import OpContext
from cockpit.ops.history import BootHistory
from cockpit.ops.launch import launch
from cockpit.ssh.inventory import pool_for
from cockpit_sim.fleet import SimFleet
from tests.ops.conftest import BOOT_TIMEOUT, QWEN, finished, run

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
Series = tuple[str, tuple[tuple[str, str], ...]]


class RecordingCollector(SnapshotCollector):
    """Remembers every value it served, per series: what Prometheus stored must be one of them."""

    def __init__(self) -> None:
        super().__init__()
        self.served: dict[Series, set[float]] = {}

    def collect(self):  # type: ignore[no-untyped-def]
        for family in super().collect():
            for s in family.samples:
                key = (s.name, tuple(sorted(s.labels.items())))
                self.served.setdefault(key, set()).add(s.value)
            yield family


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[Callable[[int], str]]:
    """Starts a Prometheus scraping 127.0.0.1:PORT every second; returns its base URL. Its own
    port, config and storage per test; stopped (and reaped) in teardown."""
    if not Path(PROMETHEUS).exists():
        pytest.fail("Debian's prometheus is not installed (.ci/run installs it)")
    started: list[subprocess.Popen[bytes]] = []

    def start(target_port: int) -> str:
        config = tmp_path / "prometheus.yml"
        config.write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            "scrape_configs:\n"
            "  - job_name: cockpit\n"
            f"    static_configs: [{{targets: ['127.0.0.1:{target_port}']}}]\n"
        )
        port = _free_port()
        log = (tmp_path / "prometheus.log").open("wb")
        started.append(
            subprocess.Popen(
                [
                    PROMETHEUS,
                    f"--config.file={config}",
                    f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                    f"--web.listen-address=127.0.0.1:{port}",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )
        return f"http://127.0.0.1:{port}"

    yield start
    for process in started:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def _query(http: httpx.AsyncClient, base: str, promql: str) -> list[dict]:
    response = await http.get(f"{base}/api/v1/query", params={"query": promql})
    body = response.json()
    return body["data"]["result"] if body.get("status") == "success" else []


async def test_a_real_prometheus_scrapes_the_fleet(
    fleet_factory: Callable[..., SimFleet],
    prometheus: Callable[[int], str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COCKPIT_STATE_DIR", str(tmp_path / "state"))
    fleet = fleet_factory(2, speed=200.0, boot_speed=200.0)
    inventory = load_inventory(fleet.inventory_dir)
    pool = pool_for(inventory)
    ctx = OpContext(inventory, pool, BootHistory(tmp_path / "boot.json"))
    up = finished(await run(launch(ctx, inventory.recipe(QWEN), "2nodes-dac",
                                   boot_timeout_s=BOOT_TIMEOUT)))  # fmt: skip
    assert up.ok, up.summary
    collector = RecordingCollector()
    lane = f'lane="{QWEN}",cluster="2nodes-dac"'
    wanted = {
        "temp": 'cockpit_node_gpu_temperature_celsius{node="dgx1"}',
        "util": 'cockpit_node_gpu_utilization_ratio{node="dgx1"}',
        "serving": f'cockpit_lane_state{{{lane},state="serving"}}',
        "ranks": f"cockpit_lane_ranks_up{{{lane}}}",
    }
    found: dict[str, list[dict]] = {}
    with serving("127.0.0.1", 0, collector) as port:
        exporting = asyncio.create_task(
            export(inventory, pool, collector, tmp_path / "reports", publish_s=0.5)
        )
        base = prometheus(port)
        try:
            async with httpx.AsyncClient(timeout=5.0) as http:
                for _ in range(120):  # Prometheus' start, a first scrape, the lane seen serving
                    await asyncio.sleep(0.5)
                    found = {k: await _query(http, base, q) for k, q in wanted.items()}
                    if all(found.values()) and found["serving"][0]["value"][1] == "1":
                        break
                targets = (await http.get(f"{base}/api/v1/targets")).json()
            # the TUI's `h` with `[history] source = "prometheus:URL"` reads this Prometheus
            now = time.time()
            ranges = await asyncio.to_thread(
                query_ranges, base, (QWEN, "2nodes-dac"), now - 60, now
            )
        finally:
            exporting.cancel()
            await asyncio.gather(exporting, return_exceptions=True)
            await pool.close()
    assert all(found.values()), (found, targets)
    assert targets["data"]["activeTargets"][0]["health"] == "up"
    assert {r["metric"]["node"] for r in ranges["nodes"] if r["values"]} == {"dgx1", "dgx2"}
    assert all(ranges[name] and ranges[name][0]["values"] for name in ("kv", "gen", "prompt"))
    for key in ("temp", "util"):
        labels = found[key][0]["metric"]
        name = labels.pop("__name__")
        series = (
            name,
            tuple(sorted((k, v) for k, v in labels.items() if k not in ("job", "instance"))),
        )
        assert float(found[key][0]["value"][1]) in collector.served[series], (key, found[key])
    assert found["serving"][0]["value"][1] == "1"
    assert found["ranks"][0]["value"][1] == "2"
