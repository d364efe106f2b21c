"""A light, steady synthetic load on a lane: what `cockpit demo` runs so that every pane shows
live figures before the newcomer presses a key.

Bounded by construction: `streams` requests at most in flight, each waiting for its answer and a
pause before the next, so nothing queues up however slow the engine is.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass


@dataclass
class LoadCount:
    """What the load did so far (the TUI's notice when `g` stops it says it)."""

    ok: int = 0
    failed: int = 0
    last_error: str = ""


@dataclass(frozen=True)
class LoadShape:
    streams: int = 2
    max_tokens: int = 96
    prompt_chars: tuple[int, int] = (400, 3_000)
    pause_s: tuple[float, float] = (0.2, 1.0)
    timeout_s: float = 60.0


def prompt(rng: random.Random, chars: tuple[int, int]) -> str:
    """A random window of the bench's book, `chars` characters long at most."""
    from cockpit.bench.prompts import book_text  # the tokenizers library: only once a load runs

    book = book_text()
    size = rng.randint(*chars)
    start = rng.randrange(0, len(book) - size)
    return book[start : start + size]


async def steady_load(
    base_url: str,
    count: LoadCount,
    shape: LoadShape = LoadShape(),
    api_key: str | None = None,
    seed: int = 0,
) -> None:
    """Send chat completions to `base_url` (with the lane's API key, if any) until cancelled;
    failures are counted, then paused on (an engine that went away is not hammered)."""
    import httpx

    from cockpit.api_key import auth_headers
    from cockpit.bench.client import served_model

    async with httpx.AsyncClient(timeout=shape.timeout_s, headers=auth_headers(api_key)) as http:
        model = await served_model(http, base_url)

        async def stream(index: int) -> None:
            rng = random.Random(seed * 1000 + index)
            while True:
                body = {
                    "model": model,
                    "messages": [{"role": "user", "content": prompt(rng, shape.prompt_chars)}],
                    "max_tokens": shape.max_tokens,
                }
                try:
                    resp = await http.post(f"{base_url}/v1/chat/completions", json=body)
                    resp.raise_for_status()
                    count.ok += 1
                    await asyncio.sleep(rng.uniform(*shape.pause_s))
                except httpx.HTTPError as exc:
                    count.failed += 1
                    count.last_error = f"{type(exc).__name__}: {exc}"[:200]
                    await asyncio.sleep(shape.pause_s[1] * 5)

        async with asyncio.TaskGroup() as group:
            for index in range(shape.streams):
                group.create_task(stream(index))
