"""The OpenAI-compatible HTTP face of rank 0 (aiohttp), shaped like vLLM 0.32's responses.

Streaming follows the real capture (shared/reference/vllm-0.32-cpu/sse_chat_stream.txt): the role
chunk is sent with the first output (so time-to-first-response is time-to-first-token), one
content chunk per engine step (several tokens under speculative decoding, with `token_ids` when
the request sets `return_token_ids`), the finish reason on the last content chunk, a usage chunk
with `"choices":[]` when `stream_options.include_usage`, then `data: [DONE]`.

Without `max_tokens` a chat answer stops by itself ("stop") after a deterministic 48..247 tokens;
with it, the pseudo-model talks until the limit ("length"), as benchmarks expect.
"""

from __future__ import annotations

import json
import time
import uuid
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger

from cockpit.sim.engine import logs, text
from cockpit.sim.engine.args import EngineArgs
from cockpit.sim.engine.core import EngineCore
from cockpit.sim.engine.metrics import Exposition
from cockpit.sim.engine.scheduler import Request

SPEED_HEADER = "X-Sparkring-Sim-Speed"


@dataclass
class ServerContext:
    args: EngineArgs
    core: EngineCore
    max_model_len: int
    kv_tokens: int
    kv_gib: float
    lane: str
    created: int


def _error(status: int, message: str, kind: str, param: str | None = None) -> web.Response:
    body = {"error": {"message": message, "type": kind, "param": param, "code": status}}
    return web.json_response(body, status=status)


class AccessLogger(AbstractAccessLogger):
    """uvicorn's access line (`INFO:     127.0.0.1:34042 - "POST /v1/... HTTP/1.1" 200 OK`)."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        peer = request.transport.get_extra_info("peername") if request.transport else None
        where = f"{peer[0]}:{peer[1]}" if peer else "-"
        print(
            logs.access(where, request.method, request.path, response.status, response.reason),
            flush=True,
        )


def build_app(ctx: ServerContext) -> web.Application:
    @web.middleware
    async def speed_header(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        response = await handler(request)
        response.headers[SPEED_HEADER] = repr(ctx.core.speed)
        return response

    @web.middleware
    async def http_metrics(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        """prometheus-fastapi-instrumentator's figures: handler = the route template."""
        began = ctx.core.now()
        status, size = 500, 0
        try:
            response = await handler(request)
            status, size = response.status, response.content_length or 0
            return response
        except web.HTTPException as refused:
            status = refused.status
            raise
        finally:
            resource = request.match_info.route.resource
            route = resource.canonical if resource is not None else "none"
            length = request.content_length or 0
            ctx.core.metrics.on_http(
                route, request.method, status, length, size, ctx.core.now() - began
            )

    app = web.Application(middlewares=[http_metrics, speed_header], client_max_size=64 * 2**20)
    handlers = _Handlers(ctx)
    app.router.add_get("/health", handlers.health)
    app.router.add_get("/v1/models", handlers.models)
    app.router.add_get("/metrics", handlers.metrics)
    app.router.add_get("/v1/sparkring/status/view", handlers.status)
    app.router.add_post("/v1/chat/completions", handlers.chat)
    app.router.add_post("/v1/completions", handlers.completions)
    return app


class _Handlers:
    def __init__(self, ctx: ServerContext) -> None:
        self.ctx = ctx
        self.exposition = Exposition(ctx.core.metrics)

    async def health(self, _: web.Request) -> web.Response:
        return web.Response(status=200)

    async def models(self, _: web.Request) -> web.Response:
        a = self.ctx.args
        card = {
            "id": a.name,
            "object": "model",
            "created": self.ctx.created,
            "owned_by": "vllm",
            "root": a.model,
            "parent": None,
            "max_model_len": self.ctx.max_model_len,
        }
        return web.json_response({"object": "list", "data": [card]})

    async def metrics(self, _: web.Request) -> web.Response:
        body = await self.exposition.body()
        return web.Response(body=body, headers={"Content-Type": "text/plain; version=0.0.4"})

    async def status(self, _: web.Request) -> web.Response:
        ctx, core = self.ctx, self.ctx.core
        sched = core.scheduler
        return web.json_response(
            {
                "phase": "hung" if core.hung else "serving",
                "engine_phase": core.phase,
                "model": ctx.args.model,
                "served_model_name": ctx.args.name,
                "lane": ctx.lane,
                "tensor_parallel_size": ctx.args.tensor_parallel_size,
                "max_model_len": ctx.max_model_len,
                "kv_pool": {
                    "tokens": ctx.kv_tokens,
                    "gib": round(ctx.kv_gib, 2),
                    "block_size": sched.config.block_size,
                    "num_blocks": sched.config.num_blocks,
                    "usage": sched.pool.usage,
                },
                "running": len(sched.running),
                "waiting": len(sched.waiting),
                "uptime_s": round(core.now(), 3),
                "speed": core.speed,
                "steps": core.steps,
            }
        )

    async def chat(self, request: web.Request) -> web.StreamResponse:
        received = self.ctx.core.now()
        body = await _json_body(request)
        if isinstance(body, web.Response):
            return body
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return _error(400, "messages must be a non-empty list", "BadRequestError", "messages")
        rendered = text.render_chat(messages, bool(body.get("add_generation_prompt", True)))
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        return await self._generate(request, body, rendered, limit, received, chat=True)

    async def completions(self, request: web.Request) -> web.StreamResponse:
        received = self.ctx.core.now()
        body = await _json_body(request)
        if isinstance(body, web.Response):
            return body
        prompt = body.get("prompt")
        if isinstance(prompt, list) and prompt and isinstance(prompt[0], str):
            prompt = prompt[0]
        if not isinstance(prompt, str):
            return _error(400, "prompt must be a string", "BadRequestError", "prompt")
        limit = body.get("max_tokens", 16)
        return await self._generate(request, body, prompt, limit, received, chat=False)

    async def _generate(
        self,
        request: web.Request,
        body: dict[str, Any],
        prompt: str,
        limit: Any,
        received: float,
        chat: bool,
    ) -> web.StreamResponse:
        ctx = self.ctx
        model = body.get("model")
        if model is not None and model not in (ctx.args.name, ctx.args.model):
            return _error(404, f"The model `{model}` does not exist.", "NotFoundError", "model")
        ids = text.encode(prompt)
        mml = ctx.max_model_len
        if len(ids) >= mml:
            return _error(
                400,
                f"This model's maximum context length is {mml} tokens. However, your request "
                f"has {len(ids)} input tokens. Please reduce the length of the input messages.",
                "BadRequestError",
            )
        if limit is not None and (not isinstance(limit, int) or limit < 1):
            return _error(400, "max_tokens must be at least 1", "BadRequestError", "max_tokens")
        if limit is not None and limit + len(ids) > mml:
            return _error(
                400,
                f"'max_tokens' or 'max_completion_tokens' is too large: {limit}. This model's "
                f"maximum context length is {mml} tokens and your request has {len(ids)} input "
                f"tokens ({limit} > {mml} - {len(ids)}).",
                "BadRequestError",
            )
        seed = zlib.crc32(prompt.encode())
        prefix = "chatcmpl-" if chat else "cmpl-"
        rid = prefix + uuid.uuid4().hex[:16]
        req = Request(
            request_id=rid,
            prompt_token_ids=ids,
            max_tokens=limit if limit is not None else mml - len(ids),
            arrival=0.0,
            min_tokens=int(body.get("min_tokens") or 0),
            ignore_eos=bool(body.get("ignore_eos")),
            natural_length=None if limit is not None else 48 + seed % 200,
        )
        queue = ctx.core.submit(req, received)
        reply = _Reply(rid, int(time.time()), ctx.args.name, chat, seed, len(ids))
        try:
            if body.get("stream"):
                return await self._stream(request, body, queue, reply)
            count, reason = 0, None
            while reason is None:
                out = await queue.get()
                count += out.count
                reason = out.finish_reason
            return web.json_response(reply.full(text.pseudo_text(seed, 0, count), count, reason))
        finally:
            if req.finish_reason is None:
                ctx.core.abort(rid)

    async def _stream(
        self, request: web.Request, body: dict[str, Any], queue: Any, reply: _Reply
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        response.headers[SPEED_HEADER] = repr(self.ctx.core.speed)
        await response.prepare(request)
        with_ids = bool(body.get("return_token_ids"))
        options = body.get("stream_options") or {}
        usage = isinstance(options, dict) and bool(options.get("include_usage"))
        emitted = 0
        reason = None
        while reason is None:
            out = await queue.get()
            reason = out.finish_reason
            if out.first and reply.chat:
                await _send(response, reply.role_chunk(with_ids))
            piece = text.pseudo_text(reply.seed, emitted, out.count)
            ids = text.encode(piece) if with_ids else None
            emitted += out.count
            await _send(response, reply.delta_chunk(piece, ids, reason))
        if usage:
            await _send(response, reply.usage_chunk(emitted))
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


async def _json_body(request: web.Request) -> dict[str, Any] | web.Response:
    try:
        body = await request.json()
    except ValueError:
        return _error(400, "Request body is not valid JSON", "BadRequestError")
    if not isinstance(body, dict):
        return _error(400, "Request body must be a JSON object", "BadRequestError")
    return body


async def _send(response: web.StreamResponse, chunk: dict[str, Any]) -> None:
    data = json.dumps(chunk, ensure_ascii=False, separators=(",", ":"))
    await response.write(f"data: {data}\n\n".encode())


@dataclass(frozen=True)
class _Reply:
    """JSON shapes of one response (chat or legacy completion)."""

    rid: str
    created: int
    model: str
    chat: bool
    seed: int
    prompt_tokens: int

    def _head(self, kind: str) -> dict[str, Any]:
        return {"id": self.rid, "object": kind, "created": self.created, "model": self.model}

    def role_chunk(self, with_ids: bool) -> dict[str, Any]:
        choice = {
            "index": 0,
            "delta": {"role": "assistant", "content": ""},
            "logprobs": None,
            "finish_reason": None,
        }
        chunk = self._head("chat.completion.chunk") | {"choices": [choice]}
        return chunk | {"prompt_token_ids": None, "prompt_text": None}

    def delta_chunk(self, piece: str, ids: list[int] | None, reason: str | None) -> dict[str, Any]:
        if self.chat:
            choice: dict[str, Any] = {"index": 0, "delta": {"content": piece}, "logprobs": None}
            kind = "chat.completion.chunk"
        else:
            choice = {"index": 0, "text": piece, "logprobs": None}
            kind = "text_completion"
        choice["finish_reason"] = reason
        if reason is not None:
            choice["stop_reason"] = None
        choice["token_ids"] = ids
        return self._head(kind) | {"choices": [choice]}

    def usage_chunk(self, completion: int) -> dict[str, Any]:
        kind = "chat.completion.chunk" if self.chat else "text_completion"
        return self._head(kind) | {"choices": [], "usage": self._usage(completion)}

    def _usage(self, completion: int) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "total_tokens": self.prompt_tokens + completion,
            "completion_tokens": completion,
        }

    def full(self, produced: str, completion: int, reason: str) -> dict[str, Any]:
        if self.chat:
            choice: dict[str, Any] = {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": produced,
                    "refusal": None,
                    "tool_calls": [],
                    "reasoning_content": None,
                },
                "logprobs": None,
                "finish_reason": reason,
                "stop_reason": None,
            }
            kind = "chat.completion"
        else:
            choice = {
                "index": 0,
                "text": produced,
                "logprobs": None,
                "finish_reason": reason,
                "stop_reason": None,
            }
            kind = "text_completion"
        return self._head(kind) | {"choices": [choice], "usage": self._usage(completion)}
