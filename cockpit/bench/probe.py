"""`cockpit probe`: the seed's two diagnosis instruments, built in.

1. The 8-token health check: a tiny chat completion and its latency.
2. The wire probe (the seed's `/tmp/wire-probe.py` pattern): one streaming request read straight
   off the socket, a receive timestamp for every `recv()`, so what the server flushed and when is
   known independently of any client's processing. The inter-chunk gaps are compared with the
   engine's own inter-token latency (from `/metrics`): chunks that leave late or in bursts mean
   the server (or a proxy) flushes late; chunks that arrive on the engine's beat mean any stall
   a client shows is that client reading late.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx

from cockpit.api_key import auth_headers
from cockpit.telemetry.metrics import parse_metrics, window
from cockpit.telemetry.sse import SseParser

BURST_EVENTS_PER_RECV = 1.5
LATE_GAP_FACTOR = 3.0


@dataclass(frozen=True)
class GapStats:
    count: int
    p50_ms: float
    p90_ms: float
    max_ms: float
    mean_ms: float


def gap_stats(times: Sequence[float]) -> GapStats | None:
    """Gaps between consecutive timestamps (seconds in, milliseconds out)."""
    gaps = [(b - a) * 1000 for a, b in itertools.pairwise(times)]
    if not gaps:
        return None
    ordered = sorted(gaps)

    def pct(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return GapStats(len(gaps), pct(0.5), pct(0.9), ordered[-1], statistics.fmean(gaps))


@dataclass
class ChunkedDecoder:
    """HTTP/1.1 chunked transfer decoding, fed as bytes arrive."""

    _buffer: bytes = b""
    _remaining: int = 0
    done: bool = False

    def feed(self, data: bytes) -> bytes:
        self._buffer += data
        out = bytearray()
        while not self.done:
            if self._remaining:
                take = self._buffer[: self._remaining]
                out += take
                self._buffer = self._buffer[len(take) :]
                self._remaining -= len(take)
                if self._remaining:
                    break
                continue
            if self._buffer.startswith(b"\r\n"):
                self._buffer = self._buffer[2:]
            line, sep, rest = self._buffer.partition(b"\r\n")
            if not sep:
                break
            size = int(line.split(b";")[0] or b"0", 16)
            self._buffer = rest
            if size == 0:
                self.done = True
                break
            self._remaining = size
        return bytes(out)


@dataclass
class WireLog:
    """What the socket delivered: per recv, its time, size and the SSE content events in it."""

    recv_times: list[float] = field(default_factory=list)
    recv_bytes: list[int] = field(default_factory=list)
    recv_events: list[int] = field(default_factory=list)
    event_times: list[float] = field(default_factory=list)
    status: int = 0
    tokens: int = 0


def verdict(log: WireLog, engine_itl_ms: float | None, scale: float = 1.0) -> str:
    """Server flushes late, or chunks arrive on the engine's beat (a slow client reads late)."""
    gaps = gap_stats([t * scale for t in log.event_times])
    if gaps is None:
        return "inconclusive: fewer than two content chunks arrived"
    with_events = [n for n in log.recv_events if n]
    per_recv = statistics.fmean(with_events) if with_events else 0.0
    reference = engine_itl_ms or gaps.p50_ms
    bursty = per_recv > BURST_EVENTS_PER_RECV
    late = gaps.p90_ms > LATE_GAP_FACTOR * reference
    beat = f"p50 gap {gaps.p50_ms:.1f} ms, p90 {gaps.p90_ms:.1f} ms, max {gaps.max_ms:.1f} ms"
    engine = f"engine ITL {engine_itl_ms:.1f} ms" if engine_itl_ms else "engine ITL unknown"
    if bursty or (late and engine_itl_ms):
        how = f"in bursts of {per_recv:.1f} events per recv" if bursty else "late"
        return (
            f"SERVER FLUSHES LATE: chunks reach the socket {how} ({beat}; {engine}); "
            "look at the server or a proxy buffering the stream"
        )
    return (
        f"server flushes on time: chunks arrive on the engine's beat ({beat}; {engine}); "
        "a client that shows stalls is reading late (its event loop or its output buffering)"
    )


async def wire_stream(
    url: str, model: str, prompt: str, max_tokens: int, api_key: str | None = None
) -> WireLog:
    """One streaming chat completion over a raw socket, a timestamp per `recv()`."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    body = json.dumps(
        {
            "model": model,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
    ).encode()
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Content-Type: application/json\r\nAccept: text/event-stream\r\n"
        + "".join(f"{name}: {value}\r\n" for name, value in auth_headers(api_key).items())
        + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    log = WireLog()
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(head + body)
        await writer.drain()
        raw, chunked, headers_done = b"", None, False
        decoder, sse = ChunkedDecoder(), SseParser()
        while True:
            data = await reader.read(65536)
            at = time.perf_counter()
            if not data:
                break
            if not headers_done:
                raw += data
                if b"\r\n\r\n" not in raw:
                    continue
                header, _, data = raw.partition(b"\r\n\r\n")
                lines = header.decode(errors="replace").split("\r\n")
                log.status = int(lines[0].split()[1])
                chunked = any(
                    ln.lower().startswith("transfer-encoding:") and "chunked" in ln.lower()
                    for ln in lines[1:]
                )
                headers_done = True
            payload = decoder.feed(data) if chunked else data
            events = 0
            for event in sse.feed(payload):
                try:
                    obj = json.loads(event.data)
                except ValueError:
                    continue
                choices = obj.get("choices") if isinstance(obj, dict) else None
                if choices and (choices[0].get("delta") or {}).get("content"):
                    events += 1
                    log.event_times.append(at)
                usage = obj.get("usage") if isinstance(obj, dict) else None
                if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
                    log.tokens = usage["completion_tokens"]
            log.recv_times.append(at)
            log.recv_bytes.append(len(data))
            log.recv_events.append(events)
            if chunked and decoder.done:
                break
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await writer.wait_closed()
    return log


@dataclass(frozen=True)
class ProbeResult:
    health_latency_ms: float
    health_answer: str
    health_tokens: int
    wire: WireLog
    gaps: GapStats | None
    engine_itl_ms: float | None
    verdict: str
    time_scale: float


async def probe(
    url: str, model: str, scale: float = 1.0, max_tokens: int = 64, api_key: str | None = None
) -> ProbeResult:
    """The 8-token health check, then the wire probe (times in engine units via `scale`)."""
    async with httpx.AsyncClient(timeout=120.0, headers=auth_headers(api_key)) as http:
        start = time.perf_counter()
        resp = await http.post(
            f"{url}/v1/chat/completions",
            json={
                "model": model,
                "messages": [{"role": "user", "content": "ping"}],
                "max_tokens": 8,
            },
        )
        latency = (time.perf_counter() - start) * scale * 1000
        resp.raise_for_status()
        data = resp.json()
        answer = data["choices"][0]["message"].get("content") or ""
        tokens = int((data.get("usage") or {}).get("completion_tokens") or 0)
        before = parse_metrics((await http.get(f"{url}/metrics")).text, at=time.perf_counter())
        wire = await wire_stream(url, model, "Tell me a long story.", max_tokens, api_key)
        after = parse_metrics((await http.get(f"{url}/metrics")).text, at=time.perf_counter())
    itl = window(before, after).itl
    itl_ms = itl.mean * 1000 if itl and itl.mean is not None else None
    return ProbeResult(
        health_latency_ms=latency,
        health_answer=answer,
        health_tokens=tokens,
        wire=wire,
        gaps=gap_stats([t * scale for t in wire.event_times]),
        engine_itl_ms=itl_ms,
        verdict=verdict(wire, itl_ms, scale),
        time_scale=scale,
    )
