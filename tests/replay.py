"""Whole recorded texts through the product's streaming parsers, as the tests feed them (the
product reads each of these a line or a piece at a time, as it arrives)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from cockpit.telemetry.gpu import GpuCsvStream, GpuSample
from cockpit.telemetry.nccl_transport import RankTransport, TransportTracker
from cockpit.telemetry.sse import ChatStreamParser, StreamChunk


def parse_query_gpu(text: str, fields: Sequence[str] | None = None) -> list[GpuSample]:
    """`--query-gpu` CSV output (header or noheader, units or nounits); `fields` is the query
    list the caller used, needed for the noheader form only."""
    stream = GpuCsvStream(fields)
    return [s for s in (stream.feed(line) for line in text.splitlines()) if s is not None]


def summarize_transport(lines: Iterable[str]) -> tuple[RankTransport, ...]:
    """One summary per NCCL process found in `lines`."""
    tracker = TransportTracker()
    for line in lines:
        tracker.feed(line)
    return tracker.summaries()


def parse_stream(pieces: Iterable[bytes | str]) -> list[StreamChunk]:
    """A whole recorded SSE stream at once."""
    parser = ChatStreamParser()
    chunks = [c for piece in pieces for c in parser.feed(piece)]
    return chunks + parser.close()
