"""Every parser survives mangled input: truncated, spliced and random lines from every fixture."""

import random
from pathlib import Path

from cockpit.telemetry import (
    boot,
    docker_out,
    gpu,
    metrics,
    nccl_events,
    nccl_transport,
    sse,
    vllm_events,
)
from tests import replay

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "telemetry"

ALPHABET = "abcXYZ019 ,:;[](){}<>=%|/\\\"'#@.-_\t\r\n\x00\x1bé█"


def _mangled_lines(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    lines = [
        line
        for path in sorted(FIXTURES.rglob("*"))
        if path.is_file()
        for line in path.read_bytes().decode("utf-8", "replace").splitlines()
    ]
    out = []
    for _ in range(count):
        line = rng.choice(lines)
        match rng.randrange(4):
            case 0:
                line = line[: rng.randrange(len(line) + 1)]
            case 1:
                line = line[rng.randrange(len(line) + 1) :] + rng.choice(lines)
            case 2:
                cut = rng.randrange(len(line) + 1)
                line = line[:cut] + "".join(rng.choices(ALPHABET, k=8)) + line[cut:]
            case _:
                line = "".join(rng.choices(ALPHABET, k=rng.randrange(40)))
        out.append(line)
    return out


def test_line_parsers_never_raise():
    tracker, stream = boot.BootTracker(), gpu.GpuCsvStream(gpu.GPU_QUERY_FIELDS)
    nccl = nccl_transport.TransportTracker()
    lines = _mangled_lines(seed=7, count=4000)
    for line in lines:
        vllm_events.parse_event(line)
        tracker.feed(line)
        stream.feed(line)
        nccl.feed(line)
        nccl_events.parse_nccl_event(line)
    nccl.summaries()
    assert tracker.state.phase in boot.BootPhase


def test_text_parsers_never_raise():
    rng = random.Random(11)
    lines = _mangled_lines(seed=13, count=3000)
    for _ in range(60):
        text = "\n".join(rng.sample(lines, 50))
        replay.parse_query_gpu(text)
        gpu.parse_compute_apps(text)
        gpu.parse_meminfo(text)
        snap = metrics.parse_metrics(text)
        metrics.window(snap, snap)
        docker_out.parse_ps(text)
        docker_out.parse_image_inspect(text)
        docker_out.parse_container_inspect(text)
        parser = sse.ChatStreamParser()
        parser.feed(text.encode("utf-8", "replace"))
        parser.close()
