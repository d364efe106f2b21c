"""The OpenAI-compatible HTTP face of rank 0 (aiohttp), answering as vLLM 0.32's server does.

Routes: `/health`, `/version`, `/v1/models`, `/tokenize`, `/detokenize`, `/metrics`,
`/v1/chat/completions`, `/v1/completions` and the SparkRing status view; bodies and errors have
the real server's shapes (`replies`). Lengths as vLLM 0.32 checks them: `max_tokens` above
max-model-len or a prompt longer than it is refused; a prompt that fits but leaves less room
than `max_tokens` is accepted and stops at max-model-len (finish reason "length").

Streaming follows the real server (shared/reference/vllm-0.32-cpu/sse_chat_stream.txt): the role
chunk with the first output, one content chunk per engine step (several tokens under
speculative decoding), the finish reason on the last content chunk, a usage chunk with
`"choices":[]` when `stream_options.include_usage`, then `data: [DONE]`. With the node's
`bursty_stream` fault on (read at each request, so it can be switched on a serving lane), the
stream looks like a busy host's: the chunks of 4 engine steps are written at once (one socket
read for the client), the first two steps of each burst share one chunk (fewer chunks than
tokens) and the generated text carries two-byte characters split over two tokens, whose first
token is a chunk with empty text and, with `return_token_ids`, its token id.

With an API key (`--api-key`, else the env's `VLLM_API_KEY`, as vLLM reads them) a path under
`/v1` (and vLLM's other guarded prefixes) wants `Authorization: Bearer <key>` and answers vLLM's
401 without it; `/health`, `/metrics`, `/version`, `/tokenize` and `/detokenize` stay open.

Without `max_tokens` a chat answer stops by itself ("stop") after a deterministic 48..247 tokens;
with it, the pseudo-model talks until the limit ("length"), as benchmarks expect.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import time
import uuid
import zlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger
from prometheus_client import CONTENT_TYPE_LATEST

from cockpit_sim.engine import logs, replies, text
from cockpit_sim.engine.args import EngineArgs
from cockpit_sim.engine.core import EngineCore, Output
from cockpit_sim.engine.metrics import Exposition
from cockpit_sim.engine.scheduler import Request

SPEED_HEADER = "X-Sparkring-Sim-Speed"
BURSTY_FAULT = "bursty_stream"
BURST_STEPS = 4
"""Under `bursty_stream`: engine steps whose chunks go out in one write."""
SSE = "text/event-stream; charset=utf-8"


@dataclass
class ServerContext:
    args: EngineArgs
    core: EngineCore
    max_model_len: int
    kv_tokens: int
    kv_gib: float
    lane: str
    created: int
    faults: Callable[[], frozenset[str]] = frozenset
    """The node's faults now (re-read per request)."""
    api_keys: tuple[str, ...] = ()
    """Bearer tokens `/v1*` requires (`api_keys`); none: every path is open."""

    @property
    def fingerprint(self) -> str:
        config = json.dumps(self.args.non_default_args, sort_keys=True, default=str)
        return replies.fingerprint(self.args.tensor_parallel_size, config)


def _json(body: dict[str, Any], status: int = 200) -> web.Response:
    return web.json_response(body, status=status, dumps=_dumps)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _refused(body: dict[str, Any]) -> web.Response:
    return _json(body, status=body["error"]["code"])


API_KEY_ENV = "VLLM_API_KEY"
GUARDED_PREFIX = ("/v1", "/v2", "/inference", "/cohere")
"""vLLM 0.32's AuthenticationMiddleware checks the key on paths starting with one of these
(vllm/entrypoints/serve/middleware/authenticate.py), nothing else."""


def api_keys(args: EngineArgs, env: Mapping[str, str]) -> tuple[str, ...]:
    """The keys the server requires, as vLLM picks them: `--api-key` values, else the env's
    VLLM_API_KEY; empty ones dropped (an empty VLLM_API_KEY sets no key)."""
    return tuple(key for key in (args.api_keys or (env.get(API_KEY_ENV, ""),)) if key)


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def _authorised(header: str | None, digests: tuple[bytes, ...]) -> bool:
    """vLLM's check: scheme `Bearer` (any case), the rest after one space compared by hash in
    constant time with every key."""
    scheme, _, token = (header or "").partition(" ")
    if scheme.lower() != "bearer":
        return False
    found = _digest(token)
    return any([secrets.compare_digest(found, d) for d in digests])  # a list: every key compared


class AccessLogger(AbstractAccessLogger):
    """uvicorn's access line (`INFO:     127.0.0.1:34042 - "POST /v1/... HTTP/1.1" 200 OK`)."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        peer = request.transport.get_extra_info("peername") if request.transport else None
        where = f"{peer[0]}:{peer[1]}" if peer else "-"
        print(
            logs.access(where, request.method, request.path, response.status, response.reason),
            flush=True,
        )


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def build_app(ctx: ServerContext) -> web.Application:
    @web.middleware
    async def speed_header(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            response = await handler(request)
        except web.HTTPNotFound:
            response = _json({"detail": "Not Found"}, status=404)
        except web.HTTPMethodNotAllowed:
            response = _json({"detail": "Method Not Allowed"}, status=405)
        if not response.prepared:
            response.headers[SPEED_HEADER] = repr(ctx.core.speed)
        return response

    @web.middleware
    async def http_metrics(request: web.Request, handler: Handler) -> web.StreamResponse:
        """prometheus-fastapi-instrumentator's figures: handler = the route template."""
        began = ctx.core.now()
        status, size = 500, 0
        try:
            response = await handler(request)
            status, size = response.status, response.content_length or 0
            return response
        finally:
            resource = request.match_info.route.resource
            route = resource.canonical if resource is not None else "none"
            length = request.content_length or 0
            ctx.core.metrics.on_http(
                route, request.method, status, length, size, ctx.core.now() - began
            )

    digests = tuple(_digest(key) for key in ctx.api_keys)

    @web.middleware
    async def authentication(request: web.Request, handler: Handler) -> web.StreamResponse:
        """vLLM's AuthenticationMiddleware: outermost, OPTIONS and unguarded paths pass."""
        if (
            digests
            and request.method != "OPTIONS"
            and request.path.startswith(GUARDED_PREFIX)
            and not _authorised(request.headers.get("Authorization"), digests)
        ):
            return _json({"error": "Unauthorized"}, status=401)
        return await handler(request)

    app = web.Application(
        middlewares=[authentication, http_metrics, speed_header], client_max_size=64 * 2**20
    )
    handlers = _Handlers(ctx)
    app.router.add_get("/health", handlers.health)
    app.router.add_get("/version", handlers.version)
    app.router.add_get("/v1/models", handlers.models)
    app.router.add_get("/metrics", handlers.metrics)
    app.router.add_post("/tokenize", handlers.tokenize)
    app.router.add_post("/detokenize", handlers.detokenize)
    app.router.add_get("/v1/sparkring/status/view", handlers.status)
    app.router.add_post("/v1/chat/completions", handlers.chat)
    app.router.add_post("/v1/completions", handlers.completions)
    return app


class _Handlers:
    def __init__(self, ctx: ServerContext) -> None:
        self.ctx = ctx
        self.exposition = Exposition(ctx.core.metrics)
        self.fingerprint = ctx.fingerprint

    async def health(self, _: web.Request) -> web.Response:
        return web.Response(status=200)

    async def version(self, _: web.Request) -> web.Response:
        return _json({"version": logs.VLLM_VERSION})

    async def models(self, _: web.Request) -> web.Response:
        a, created = self.ctx.args, self.ctx.created
        permission = {
            "id": f"modelperm-{secrets.token_hex(8)}",
            "object": "model_permission",
            "created": created,
            "allow_create_engine": False,
            "allow_sampling": True,
            "allow_logprobs": True,
            "allow_search_indices": False,
            "allow_view": True,
            "allow_fine_tuning": False,
            "organization": "*",
            "group": None,
            "is_blocking": False,
        }
        card = {
            "id": a.name,
            "object": "model",
            "created": created,
            "owned_by": "vllm",
            "root": a.model,
            "parent": None,
            "max_model_len": self.ctx.max_model_len,
            "permission": [permission],
        }
        return _json({"object": "list", "data": [card]})

    async def metrics(self, _: web.Request) -> web.Response:
        body = await self.exposition.body()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def status(self, _: web.Request) -> web.Response:
        ctx, core = self.ctx, self.ctx.core
        sched = core.scheduler
        return _json(
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

    async def _body(self, request: web.Request) -> dict[str, Any] | web.Response:
        parsed = replies.parse_body(await request.read())
        if "error" in parsed:
            return _refused({"error": parsed["error"]})
        body = parsed["body"]
        model = body.get("model")
        a = self.ctx.args
        if model is not None and model not in (a.name, a.model):
            message = f"The model `{model}` does not exist. Valid aliases: {a.name}."
            return _refused(replies.error_body(404, message, "NotFoundError", "model"))
        return body

    async def tokenize(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        if isinstance(body, web.Response):
            return body
        messages = body.get("messages")
        if isinstance(messages, list):
            prompt = text.render_chat(messages, bool(body.get("add_generation_prompt", True)))
        else:
            prompt = str(body.get("prompt", ""))
        ids = text.encode(prompt)
        reply = {"count": len(ids), "max_model_len": self.ctx.max_model_len, "tokens": ids}
        return _json(reply | {"token_strs": None})

    async def detokenize(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        if isinstance(body, web.Response):
            return body
        tokens = body.get("tokens")
        if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
            msg = "Input should be a valid list"
            return _refused(replies.validation_error("list_type", "body.tokens", msg, "tokens"))
        return _json({"prompt": text.decode(tokens)})

    async def chat(self, request: web.Request) -> web.StreamResponse:
        received = self.ctx.core.now()
        body = await self._body(request)
        if isinstance(body, web.Response):
            return body
        messages = body.get("messages")
        if messages is None:
            given = replies.described(body)
            refused = replies.validation_error("missing", "body.messages", "Field required", given)
            return _refused(refused)
        if not isinstance(messages, list):
            msg = "Input should be a valid list"
            given = replies.described(messages)
            return _refused(replies.validation_error("list_type", "body.messages", msg, given))
        if not messages:
            message = (
                "Cannot apply chat template to an empty conversation. Provide at least one message."
            )
            return _refused(replies.error_body(400, message, "BadRequestError", None))
        for key in ("max_tokens", "max_completion_tokens"):
            if (invalid := replies.check_int(body, key)) is not None:
                return _refused(invalid)
        rendered = text.render_chat(messages, bool(body.get("add_generation_prompt", True)))
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        ids = text.encode(rendered)
        return await self._generate(request, body, ids, rendered, limit, received, chat=True)

    async def completions(self, request: web.Request) -> web.StreamResponse:
        received = self.ctx.core.now()
        body = await self._body(request)
        if isinstance(body, web.Response):
            return body
        prompt = body.get("prompt")
        if isinstance(prompt, list) and prompt and isinstance(prompt[0], str):
            prompt = prompt[0]
        if isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
            ids, seed_text = list(prompt), json.dumps(prompt)
        elif isinstance(prompt, str) and prompt:
            ids, seed_text = text.encode(prompt), prompt
        else:
            message = "Either prompt or prompt_embeds must be provided and non-empty."
            return _refused(replies.bad_request(message, "prompt"))
        if (invalid := replies.check_int(body, "max_tokens")) is not None:
            return _refused(invalid)
        limit = body.get("max_tokens", 16)
        return await self._generate(request, body, ids, seed_text, limit, received, chat=False)

    def _length_error(self, prompt_len: int, limit: int | None) -> dict[str, Any] | None:
        """vLLM 0.32's length checks; None when the request may run (truncated if need be)."""
        mml = self.ctx.max_model_len
        if limit is not None and limit < 1:
            return replies.bad_request(f"max_tokens must be at least 1, got {limit}.",
                                       "max_tokens", limit)  # fmt: skip
        if limit is not None and limit > mml:
            return replies.bad_request(
                f"max_tokens={limit} cannot be greater than max_model_len={mml}. Please request "
                "fewer output tokens.",
                "max_tokens",
                limit,
            )
        if prompt_len > mml:
            return replies.bad_request(
                f"This model's maximum context length is {mml} tokens. However, your prompt "
                f"contains at least {mml + 1} input tokens, which exceeds this limit even without "
                "any output tokens. Please reduce the length of the input prompt.",
                "input_tokens",
                mml + 1,
            )
        room = mml - prompt_len
        if room < 1:
            return replies.bad_request(f"max_tokens must be at least 1, got {room}.",
                                       "max_tokens", room)  # fmt: skip
        return None

    async def _generate(
        self,
        request: web.Request,
        body: dict[str, Any],
        ids: list[int],
        seed_text: str,
        limit: int | None,
        received: float,
        chat: bool,
    ) -> web.StreamResponse:
        ctx = self.ctx
        refused = self._length_error(len(ids), limit)
        if refused is not None:
            return _refused(refused)
        room = ctx.max_model_len - len(ids)
        seed = zlib.crc32(seed_text.encode())
        rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex[:16]
        req = Request(
            request_id=rid,
            prompt_token_ids=ids,
            max_tokens=room if limit is None else min(limit, room),
            arrival=0.0,
            min_tokens=int(body.get("min_tokens") or 0),
            ignore_eos=bool(body.get("ignore_eos")),
            natural_length=None if limit is not None else 48 + seed % 200,
        )
        queue = ctx.core.submit(req, received)
        bursty = BURSTY_FAULT in ctx.faults()
        reply = replies.Reply(
            rid,
            int(time.time()),
            ctx.args.name,
            chat,
            ids,
            self.fingerprint,
            bool(body.get("return_token_ids")),
        )
        stream = _Stream(seed, bursty)
        try:
            if body.get("stream"):
                return await self._stream(request, body, queue, reply, stream)
            reason = None
            while reason is None:
                out = await queue.get()
                stream.take(out)
                reason = out.finish_reason
            produced = text.IncrementalDecoder().feed(stream.ids)
            return _json(reply.full(produced, stream.ids, reason))
        finally:
            if req.finish_reason is None:
                ctx.core.abort(rid)

    async def _stream(
        self,
        request: web.Request,
        body: dict[str, Any],
        queue: asyncio.Queue[Output],
        reply: replies.Reply,
        stream: _Stream,
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": SSE})
        response.headers[SPEED_HEADER] = repr(self.ctx.core.speed)
        await response.prepare(request)
        options = body.get("stream_options") or {}
        usage = isinstance(options, dict) and bool(options.get("include_usage"))
        prompt_json = replies.ids_json(reply.prompt_ids) if reply.with_ids else ""

        def event(chunk: dict[str, Any]) -> bytes:
            return f"data: {replies.splice(_dumps(chunk), prompt_json)}\n\n".encode()

        decoder = text.IncrementalDecoder()
        held: list[bytes] = []
        carried: list[int] = []
        steps, first, reason = 0, True, None
        while reason is None:
            out = await queue.get()
            reason = out.finish_reason
            if out.first and reply.chat:
                held.append(event(reply.role_chunk()))
            ids = carried + stream.take(out)
            steps += 1
            if stream.bursty and steps == 1 and reason is None:
                carried = ids  # the burst's first two steps make one chunk
                continue
            carried = []
            last = reason is not None and not usage
            chunk = reply.delta_chunk(decoder.feed(ids), ids, reason, first, last)
            held.append(event(chunk))
            first = False
            if not stream.bursty or steps >= BURST_STEPS or reason is not None:
                await response.write(b"".join(held))
                held, steps = [], 0
        if usage:
            held.append(event(reply.usage_chunk(len(stream.ids))))
        held.append(b"data: [DONE]\n\n")
        await response.write(b"".join(held))
        await response.write_eof()
        return response


class _Stream:
    """The tokens one request has generated so far (the pseudo-model's deterministic stream)."""

    def __init__(self, seed: int, bursty: bool) -> None:
        self.seed = seed
        self.bursty = bursty
        self.ids: list[int] = []

    def take(self, out: Output) -> list[int]:
        new = text.pseudo_ids(self.seed, len(self.ids), out.count, multibyte=self.bursty)
        self.ids += new
        return new
