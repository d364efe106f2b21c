"""The built-in driver's HTTP side: one streamed chat completion timed like llama-benchy times it.

Timestamps come from a `Clock` in engine seconds: wall time × the engine's time scale (1 on a
real engine; the simulator runs X× faster than the time it reports), so every rate and latency
derived from them is in the engine's units.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx

from cockpit.api_key import auth_headers
from cockpit.bench.method import RequestTiming
from cockpit.telemetry.sse import SseParser

if TYPE_CHECKING:
    import aiohttp

CONTEXT_LOAD_USER_MESSAGE = "."  # llama-benchy's probe turn for a context load


class Clock:
    """Engine seconds since the clock was made."""

    def __init__(self, scale: float = 1.0) -> None:
        self.scale = scale
        self._origin = time.perf_counter()

    def now(self) -> float:
        return (time.perf_counter() - self._origin) * self.scale


def messages(context: str, prompt: str) -> list[dict[str, str]]:
    out = [{"role": "system", "content": context}] if context else []
    out.append({"role": "user", "content": prompt if prompt.strip() else CONTEXT_LOAD_USER_MESSAGE})
    return out


_PROMPT_IDS = re.compile(r'"prompt_token_ids":\[[\d,\s]*\]')
_LARGE = 1 << 16


def _chunk_fields(data: str) -> tuple[bool, bool, int | None, dict[str, Any] | None]:
    """(has choices, has text, token-id count, usage) of one SSE data payload.

    A chunk may carry token ids with empty text (a token that ends inside a UTF-8 character,
    a special token): its tokens count all the same. With `return_token_ids` vLLM puts the whole
    prompt's ids on the first chunk (1.5 MB at a 256K depth): they are cut out before parsing,
    which would otherwise take tens of ms while the first tokens wait in the socket and are then
    stamped together."""
    if len(data) > _LARGE:
        data = _PROMPT_IDS.sub('"prompt_token_ids":null', data, count=1)
    try:
        obj = json.loads(data)
    except ValueError:
        return False, False, None, None
    if not isinstance(obj, dict):
        return False, False, None, None
    usage = obj.get("usage") if isinstance(obj.get("usage"), dict) else None
    choices = obj.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return False, False, None, usage
    choice = choices[0]
    delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
    content = delta.get("content") or delta.get("reasoning_content") or delta.get("reasoning")
    ids = choice.get("token_ids")
    return True, bool(content), len(ids) if isinstance(ids, list) else None, usage


def chat_body(model: str, context: str, prompt: str, max_tokens: int) -> bytes:
    """llama-benchy's streaming payload, encoded once, before the batch is sent."""
    payload = {
        "model": model,
        "messages": messages(context, prompt),
        "max_tokens": max_tokens,
        "stream": True,
        "return_token_ids": True,
        "stream_options": {"include_usage": True},
    }
    return json.dumps(payload).encode()


def stream_session(
    connections: int, timeout_s: float, api_key: str | None = None
) -> aiohttp.ClientSession:
    """The streaming requests' HTTP client: aiohttp, as llama-benchy's.

    Its `iter_any()` hands over everything one socket read delivered at once, so SSE chunks that
    arrived together get one timestamp (httpx yields each HTTP chunk of a read separately, and
    stamping each apart made bursts look like 10,000+ t/s of decode). Keep-alive connections,
    so a stream does not pay a connection setup (an SSH channel through a forward) in its TTFT.
    Every request carries the lane's API key (`Authorization: Bearer`) when it has one.
    """
    import aiohttp  # ~0.25 s of imports: only a bench pays them

    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=connections, keepalive_timeout=600),
        timeout=aiohttp.ClientTimeout(total=timeout_s, sock_connect=30.0),
        headers=auth_headers(api_key),
    )


async def stream_chat(
    session: aiohttp.ClientSession,
    base_url: str,
    body: bytes,
    expected_prompt_tokens: int,
    clock: Clock,
    on_tokens: Callable[[int], None] | None = None,
) -> RequestTiming:
    """Send one streaming chat completion (`chat_body`) and time it; errors go to `.error`.

    Bodies are encoded before a batch starts so the streams of a batch leave together: encoding
    a 256K-token prompt takes milliseconds, which would stagger the arrivals. Tokens are counted
    from the chunks' token ids (chunks with empty text included), else from `usage`.
    """
    import aiohttp

    timing = RequestTiming(start=clock.now(), expected_prompt_tokens=expected_prompt_tokens)
    tokens = 0
    try:
        headers = {"Content-Type": "application/json"}
        url = f"{base_url}/v1/chat/completions"
        async with session.post(url, data=body, headers=headers) as resp:
            if resp.status != 200:
                answer = (await resp.read()).decode(errors="replace")
                timing.error = f"HTTP {resp.status}: {answer[:300]}"
                return timing
            parser = SseParser()
            async for piece in resp.content.iter_any():
                # one timestamp per socket read: SSE chunks that arrived together share it
                at = clock.now()
                for event in parser.feed(piece):
                    if event.data.strip() == "[DONE]":
                        continue
                    has_choices, has_text, ids, usage = _chunk_fields(event.data)
                    if usage:
                        if isinstance(usage.get("prompt_tokens"), int):
                            timing.usage_prompt_tokens = usage["prompt_tokens"]
                        if isinstance(usage.get("completion_tokens"), int):
                            timing.usage_completion_tokens = usage["completion_tokens"]
                    if has_choices and timing.first_response is None:
                        timing.first_response = at
                    if ids or (has_text and ids is None):
                        timing.content_chunk(at, ids)
                        tokens += ids if ids is not None else 1
                        if on_tokens is not None:
                            on_tokens(tokens)
        timing.finalize(clock.now())
    except (aiohttp.ClientError, TimeoutError) as exc:
        timing.error = f"{type(exc).__name__}: {exc}"
    return timing


LATENCY_SAMPLES = 5


async def measure_latency(
    http: httpx.AsyncClient, base_url: str, clock: Clock, samples: int = LATENCY_SAMPLES
) -> float:
    """llama-benchy's `api` latency mode (`GET /v1/models` round trips), robust: the median of
    `samples`, so one slow round trip cannot zero a point's pp.

    One untimed request first opens the connection (llama-benchy's warm-up requests do that
    for it), so connection setup is not counted as network latency.
    """
    try:
        await (await http.get(f"{base_url}/v1/models")).aread()
    except httpx.HTTPError:
        return 0.0
    found: list[float] = []
    for _ in range(samples):
        start = clock.now()
        try:
            resp = await http.get(f"{base_url}/v1/models")
            await resp.aread()
        except httpx.HTTPError:
            continue
        found.append(clock.now() - start)
    return statistics.median(found) if found else 0.0


async def served_model(http: httpx.AsyncClient, base_url: str) -> str:
    """The first model id the server lists."""
    resp = await http.get(f"{base_url}/v1/models")
    resp.raise_for_status()
    return str(resp.json()["data"][0]["id"])
