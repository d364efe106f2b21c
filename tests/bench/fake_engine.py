"""A tiny OpenAI-style streaming server for driver tests that need no simulated scheduler.

Prompts are counted in the simulated engine's tokens (the tokenizer the driver tests cut their
prompts with), plus 10 per message for the chat template; decode runs at `tg_tps` tokens/s
and prefill at `pp_tps` (wall time); `/metrics` exposes vLLM's counters; `hang` makes every new
completion hang silently after the headers, as a stuck client or engine would look.

As real vLLM does on a busy host: `burst` chunks go out in one write (one socket read for the
client), every `empty_every`-th token's chunk carries its token id with empty text (a token that
ends inside a UTF-8 character), and the completions numbered in `collapse` send every token after
the first at once, as a stalled relay that catches up would (a "decode" of microseconds).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from aiohttp import web

from cockpit_sim.engine.text import encode

MODEL = "fake-model"


@dataclass
class FakeEngine:
    pp_tps: float = 200_000.0
    tg_tps: float = 100.0
    hang: bool = False
    burst: int = 1
    empty_every: int = 0
    collapse: frozenset[int] = frozenset()
    max_model_len: int | None = None  # listed by /v1/models, as vLLM does
    status_speed: float | None = None  # a status endpoint saying `speed`, as SparkRing's might
    prompt_tokens: int = 0
    generation_tokens: int = 0
    running: int = 0
    finished: int = 0
    requests: list[dict] = field(default_factory=list)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/v1/models", self.models)
        app.router.add_post("/v1/chat/completions", self.chat)
        app.router.add_get("/metrics", self.metrics)
        if self.status_speed is not None:
            app.router.add_get("/v1/sparkring/status/view", self.status)
        return app

    async def models(self, request: web.Request) -> web.Response:
        entry: dict = {"id": MODEL, "object": "model"}
        if self.max_model_len is not None:
            entry["max_model_len"] = self.max_model_len
        return web.json_response({"object": "list", "data": [entry]})

    async def status(self, request: web.Request) -> web.Response:
        return web.json_response({"speed": self.status_speed, "image": "sparkring@sha256:abc"})

    async def metrics(self, request: web.Request) -> web.Response:
        labels = f'{{model_name="{MODEL}",engine="0"}}'
        text = (
            f"vllm:num_requests_running{labels} {self.running}\n"
            f"vllm:num_requests_waiting{labels} 0\n"
            f"vllm:prompt_tokens_total{labels} {self.prompt_tokens}\n"
            f"vllm:generation_tokens_total{labels} {self.generation_tokens}\n"
            f'vllm:request_success_total{{model_name="{MODEL}",engine="0",finished_reason="length"}} '
            f"{self.finished}\n"
        )
        return web.Response(text=text)

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        prompt = sum(len(encode(m["content"])) + 10 for m in body["messages"])
        max_tokens = int(body["max_tokens"])
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        if self.hang:
            await asyncio.sleep(3600)
        self.running += 1
        try:
            await asyncio.sleep(prompt / self.pp_tps)
            self.prompt_tokens += prompt

            async def send(obj: dict) -> None:
                await resp.write(f"data: {json.dumps(obj)}\n\n".encode())

            base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": MODEL}
            await send(
                {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}
            )
            collapsed = len(self.requests) - 1 in self.collapse
            pending: list[bytes] = []
            for i in range(max_tokens):
                if i and not (collapsed and i > 1):
                    await asyncio.sleep(1 / self.tg_tps)
                self.generation_tokens += 1
                empty = self.empty_every and i % self.empty_every == self.empty_every - 1
                text = "" if empty else "x"
                choice = {"index": 0, "delta": {"content": text}, "token_ids": [120]}
                pending.append(f"data: {json.dumps({**base, 'choices': [choice]})}\n\n".encode())
                if len(pending) >= self.burst or i == max_tokens - 1 or (collapsed and i == 0):
                    await resp.write(b"".join(pending))
                    pending = []
            usage = {"prompt_tokens": prompt, "completion_tokens": max_tokens}
            await send({**base, "choices": [], "usage": usage})
            await resp.write(b"data: [DONE]\n\n")
            self.finished += 1
        finally:
            self.running -= 1
        return resp


@asynccontextmanager
async def served(app: web.Application) -> AsyncIterator[str]:
    """`app` on a free loopback port for the block; yields its base URL."""
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        yield f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
    finally:
        await runner.cleanup()
