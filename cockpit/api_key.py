"""A lane's API key: where it comes from and how a request carries it.

The key travels like HF_TOKEN: it is the recipe's `[env] VLLM_API_KEY`, which reaches the
engine through the env file (stdin, removed once docker has read it) and which vLLM reads when
no `--api-key` is given; never the engine's argv (`--api-key` in `extra_args` is refused, the
node's `ps` and `docker inspect` Args would show it). A bare `--endpoint` (no recipe) takes the
key from the operator's own `$VLLM_API_KEY`; a `--bench-host` gets it on its stdin. Every
request the cockpit sends to a lane's `/v1/*` carries it as `Authorization: Bearer <key>`;
`/health` and `/metrics` stay open, as in vLLM.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TextIO

from cockpit.errors import InputError
from cockpit.redact import remember

API_KEY_ENV = "VLLM_API_KEY"


def lane_api_key(env: Mapping[str, str]) -> str | None:
    """The key a lane's engine requires, from its env (a recipe's `[env]`); None: no key (an
    empty value sets none, as vLLM reads it)."""
    return env.get(API_KEY_ENV) or None


def endpoint_api_key(environ: Mapping[str, str] | None = None) -> str | None:
    """The key for a bare `--endpoint`: the operator's `$VLLM_API_KEY`, remembered by the
    redactor so no output shows it."""
    key = (os.environ if environ is None else environ).get(API_KEY_ENV) or None
    if key is None:
        return None
    if not key.isprintable():
        raise InputError(
            f"${API_KEY_ENV}: holds a line break or control character, which no HTTP header "
            "can carry: set the key alone"
        )
    remember([key])
    return key


def read_key_line(stream: TextIO) -> str:
    """The key as the first line of `stream`: how `--bench-host` hands it to the bench host's
    cockpit (through the SSH channel's stdin, never its command line); remembered by the
    redactor."""
    key = stream.readline().rstrip("\n")
    if not key or not key.isprintable():
        raise InputError("--api-key-stdin: the first line of stdin is not a key")
    remember([key])
    return key


def auth_headers(api_key: str | None) -> dict[str, str]:
    """The header that carries the key (none without a key)."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}
