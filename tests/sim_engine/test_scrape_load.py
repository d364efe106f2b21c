"""Scrapes do not skew the engine: a burst of /metrics during a decode leaves the tg rate as is.

The engine renders /metrics off its event loop and keeps an engine clock that catches up after a
stall, so the stream's token rate (client wall clock, as llama-benchy measures it) is the same
with and without a scraper hammering the endpoint. Both runs happen in this one test, against
the same engine, so the comparison is a ratio that machine load cancels out of.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.sim_engine.engine_proc import SMALL, EngineProc, start

SPEED = 2.0
TOKENS = 2000
SCRAPERS = 3


@pytest.fixture
def lane(tmp_path: Path) -> Iterator[EngineProc]:
    proc = start(tmp_path / "dgx1", SMALL, speed=SPEED, boot_speed=2000)
    try:
        assert proc.wait_for("Application startup complete.", 30), proc.text()[-2000:]
        yield proc
    finally:
        proc.stop()


def _tg_rate(url: str, prompt: str) -> float:
    """Engine tokens per second after the first token of one streamed completion."""
    body = {"prompt": prompt, "max_tokens": TOKENS, "ignore_eos": True, "stream": True}
    times: list[float] = []
    with httpx.stream("POST", url + "/v1/completions", json=body, timeout=60) as response:
        for line in response.iter_lines():
            if line.startswith("data: {"):
                times.append(time.perf_counter())
    assert len(times) == TOKENS  # no drafts on this lane: one token per chunk
    return (len(times) - 1) / (times[-1] - times[0]) / SPEED


def _scrape(url: str, stop: threading.Event, counts: list[int]) -> None:
    with httpx.Client(timeout=10) as client:
        while not stop.is_set():
            assert b"vllm:generation_tokens_total" in client.get(url + "/metrics").content
            counts.append(1)


def test_a_scrape_burst_during_a_decode_keeps_the_tg_rate(lane: EngineProc) -> None:
    prompts = (f"prompt {i}" for i in itertools.count())
    quiet = _tg_rate(lane.url, next(prompts))
    stop, counts = threading.Event(), []
    scrapers = [
        threading.Thread(target=_scrape, args=(lane.url, stop, counts)) for _ in range(SCRAPERS)
    ]
    for thread in scrapers:
        thread.start()
    try:
        scraped = _tg_rate(lane.url, next(prompts))
    finally:
        stop.set()
        for thread in scrapers:
            thread.join()
    print(f"tg quiet {quiet:.1f} t/s, during {len(counts)} scrapes {scraped:.1f} t/s")
    assert len(counts) >= 10
    assert abs(scraped / quiet - 1) < 0.15, (quiet, scraped, len(counts))
