"""llama-benchy 0.4.0 (the operators' external bench client) against a simulated lane.

Offline recipe from shared/reference/formats.md: the book is served from loopback (`--book-url`),
the coherence check is skipped, the tokenizer is the one shipped with the engine. The client times
with its own (wall) clock, so its rates are `speed` × the engine's; divided by the speed they land
near what the bench's method computes for the same test on the scheduler in virtual time.
"""

from __future__ import annotations

import functools
import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from cockpit_sim.engine import text
from cockpit_sim.engine.calibration import for_lane
from cockpit_sim.engine.scheduler import SchedulerConfig
from tests.sim_engine.engine_proc import SMALL, EngineProc, free_address, start
from tests.sim_engine.virtual_clock import VirtualEngine, measure_latency, run_point

pytest.importorskip("llama_benchy")
SPEED = 4.0


@pytest.fixture
def book_url(tmp_path: Path) -> Iterator[str]:
    root = tmp_path / "www"
    root.mkdir()
    (root / "book.txt").write_text(text.pseudo_text(1, 0, 50_000), encoding="utf-8")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    host, port = free_address()
    server = http.server.ThreadingHTTPServer((host, port), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://{host}:{port}/book.txt"
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
def lane(tmp_path: Path) -> Iterator[EngineProc]:
    proc = start(
        tmp_path / "dgx1", SMALL, "--served-model-name", "qwen3-0.6b", speed=SPEED, boot_speed=500
    )
    try:
        assert proc.wait_for("Application startup complete.", 60), proc.text()[-2000:]
        yield proc
    finally:
        proc.stop()


@pytest.mark.slow
def test_llama_benchy_runs_against_a_simulated_lane(
    lane: EngineProc, book_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "result.json"
    argv = [
        sys.executable, "-m", "llama_benchy", "--base-url", lane.url + "/v1",
        "--model", "qwen3-0.6b", "--tokenizer", str(text.TOKENIZER_DIR),
        "--pp", "256", "--tg", "32", "--depth", "0", "1024", "--runs", "1",
        "--concurrency", "1", "2", "--enable-prefix-caching", "--no-warmup",
        "--skip-coherence", "--latency-mode", "generation", "--book-url", book_url,
        "--format", "json", "--save-result", str(out),
    ]  # fmt: skip
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=240, env={"HOME": str(tmp_path)}
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(out.read_text())
    rows = {(b["context_size"], b["concurrency"], b["is_context_prefill_phase"]): b
            for b in report["benchmarks"]}  # fmt: skip
    assert (1024, 2, True) in rows and (0, 1, False) in rows
    measured = rows[(0, 1, False)]["tg_throughput"]["mean"] / SPEED
    engine = VirtualEngine(for_lane("small", 1), SchedulerConfig(num_spec_tokens=0))
    expected = run_point(
        engine, pp=256, tg=32, depth=0, concurrency=1, prefix_caching=True,
        latency=measure_latency(engine), runs=1,
    ).tg_tps  # fmt: skip
    print(f"llama-benchy tg32 c1 / speed: {measured:.1f} t/s, virtual clock: {expected:.1f} t/s")
    assert abs(measured / expected - 1) < 0.35, (measured, expected)
