"""A relay on loopback in front of an engine: what a buffering proxy, or a relay that holds the
start of a stream, does to what a bench client sees.

`buffer`: every answer is read whole from the engine and sent in one write at its end (nginx's
`proxy_buffering on`): the client cannot see the decode. `late`: in the long completions (asking
for more than `hold_tokens`: not a client's short warm-ups) numbered in `late_requests`, from 0,
the content chunks are held until `hold_tokens` tokens came, then sent one
write each, a millisecond apart (a relay that stalled on its first token while the engine decoded
on, as on the first request after a boot): the client's decode reads too fast, every token in
its own read. `/v1/models` passes through, `/metrics` only with `metrics`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

from tests.bench.fake_engine import served


@dataclass
class Relay:
    upstream: str
    mode: str = "buffer"  # or "late"
    metrics: bool = True
    hold_tokens: int = 0
    late_requests: frozenset[int] = frozenset()
    long_completions: int = 0
    _session: aiohttp.ClientSession | None = field(default=None, repr=False)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/v1/models", self.passed)
        app.router.add_post("/v1/chat/completions", self.chat)
        if self.metrics:
            app.router.add_get("/metrics", self.passed)
        return app

    @property
    def session(self) -> aiohttp.ClientSession:
        assert self._session is not None
        return self._session

    async def passed(self, request: web.Request) -> web.Response:
        async with self.session.get(self.upstream + request.path) as resp:
            body = await resp.read()
            return web.Response(body=body, status=resp.status, content_type=resp.content_type)

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        number = None
        if int(json.loads(body).get("max_tokens") or 0) > self.hold_tokens:
            number = self.long_completions
            self.long_completions += 1
        headers = {"Content-Type": "application/json"}
        async with self.session.post(
            self.upstream + request.path, data=body, headers=headers
        ) as upstream:
            kind = upstream.headers.get("Content-Type", "application/json")
            out = web.StreamResponse(status=upstream.status, headers={"Content-Type": kind})
            await out.prepare(request)
            if self.mode == "buffer":
                await out.write(await upstream.read())
            elif number in self.late_requests:
                await self._late(upstream, out)
            else:
                async for piece in upstream.content.iter_any():
                    await out.write(piece)
            await out.write_eof()
            return out

    async def _late(self, upstream: aiohttp.ClientResponse, out: web.StreamResponse) -> None:
        held: list[bytes] = []
        tokens = 0
        async for event in _events(upstream):
            if tokens < self.hold_tokens and (held or _tokens(event)):
                held.append(event)
                tokens += _tokens(event)
                if tokens >= self.hold_tokens:
                    await _backlog(out, held)
                continue
            await out.write(event)
        if tokens < self.hold_tokens:
            await _backlog(out, held)


async def _backlog(out: web.StreamResponse, held: list[bytes]) -> None:
    """The held chunks, each in its own read."""
    for chunk in held:
        await out.write(chunk)
        await asyncio.sleep(0.001)


async def _events(resp: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    """The SSE events of a response, each with its blank line."""
    pending = b""
    async for piece in resp.content.iter_any():
        pending += piece
        while b"\n\n" in pending:
            event, pending = pending.split(b"\n\n", 1)
            yield event + b"\n\n"
    if pending:
        yield pending


def _tokens(event: bytes) -> int:
    """Output tokens an SSE chunk carries (its token ids), 0 for the others."""
    data = event.decode().removeprefix("data: ").strip()
    try:
        choices = json.loads(data).get("choices") or []
    except (ValueError, AttributeError):
        return 0
    ids = choices[0].get("token_ids") if choices else None
    return len(ids) if isinstance(ids, list) else 0


@asynccontextmanager
async def relayed(relay: Relay) -> AsyncIterator[str]:
    """The relay on a free loopback port for the block; yields its base URL."""
    async with aiohttp.ClientSession() as session:
        relay._session = session
        async with served(relay.app()) as url:
            yield url
