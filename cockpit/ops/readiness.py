"""Is a lane serving? `/health` answers 200 and a one-token chat completion comes back (with the
lane's API key as a Bearer token when it has one: vLLM guards `/v1`, not `/health`).

The head's port is always reached through an SSH port forward from the head node, as on a real
fleet whose engines listen on addresses the cockpit host cannot (or must not) reach: no shortcut
for an address that happens to be local (the simulated fleet), so the tests use the same path.
"""

from __future__ import annotations

import httpx

from cockpit.api_key import auth_headers
from cockpit.plan import LanePlan
from cockpit.ssh import SshError, SshPool

PROBE_TIMEOUT_S = 10.0


async def base_url(pool: SshPool, plan: LanePlan) -> str:
    """The URL this machine uses to reach the lane's API: a forward through the head's SSH
    connection (one listener per target, reused while the connection lives)."""
    host, port = await pool.forward(plan.ranks[0].node, plan.head_addr, plan.serve_port)
    return f"http://{host}:{port}"


async def probe(url: str, model: str, api_key: str | None = None) -> str | None:
    """None when the lane serves; else why not (one line)."""
    try:
        async with httpx.AsyncClient(
            base_url=url, timeout=PROBE_TIMEOUT_S, headers=auth_headers(api_key)
        ) as client:
            health = await client.get("/health")
            if health.status_code != 200:
                return f"/health answered {health.status_code}"
            chat = await client.post(
                "/v1/chat/completions",
                json={
                    "model": model,
                    "messages": [{"role": "user", "content": "ping"}],
                    "max_tokens": 1,
                },
            )
            if chat.status_code != 200:
                return f"chat completion answered {chat.status_code}: {chat.text[:120]}"
            if not chat.json().get("choices"):
                return "chat completion returned no choices"
    except (httpx.HTTPError, ValueError, SshError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


async def health(url: str) -> str | None:
    """None when `/health` answers 200; else why not (a head that died after ready)."""
    try:
        async with httpx.AsyncClient(base_url=url, timeout=PROBE_TIMEOUT_S) as client:
            answer = await client.get("/health")
    except httpx.HTTPError as exc:
        return f"/health: {type(exc).__name__}: {exc}"
    return None if answer.status_code == 200 else f"/health answered {answer.status_code}"
