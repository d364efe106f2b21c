"""A bench that loses its engine (a node stopped, the engine died): told apart from a point that
merely failed, and said in the lane's names.

A point whose every request failed, or that the driver got no figures for, is asked about: when
the engine then does not answer `/v1/models` either, it is gone, and the sweep stops there
(PARTIAL, its remaining points not measured) instead of "measuring" every other point as errors.
The lane is reached through an SSH forward on a local port, which means nothing to an operator:
its address is replaced by the node and the lane's endpoint.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

import httpx

from cockpit.api_key import auth_headers
from cockpit.bench.models import Flag, FlagKind, PointResult, PointSpec

ASK_TIMEOUT_S = 10.0


def measured_nothing(result: PointResult) -> bool:
    """The driver has no figures for the point (no result, or hung and skipped: an engine whose
    API still answers is only hung, and the sweep goes on), or every request of it failed."""
    inference = result.inference
    return inference is None or 0 < inference.requests == inference.errors


async def engine_gone(url: str, api_key: str | None) -> str | None:
    """Why the engine at `url` does not answer `/v1/models` (one line), None when it does."""
    try:
        async with httpx.AsyncClient(timeout=ASK_TIMEOUT_S, headers=auth_headers(api_key)) as http:
            resp = await http.get(f"{url}/v1/models")
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return None if resp.status_code < 500 else f"/v1/models answered HTTP {resp.status_code}"


def where(endpoint: str, node: str) -> str:
    """The engine as an operator names it: its node and its endpoint."""
    return f"{node} ({endpoint})" if node else endpoint


def named(text: str, local_url: str | None, place: str) -> str:
    """`text` with the local forward's address (`127.0.0.1:42589`, `('127.0.0.1', 42589)`)
    replaced by `place`."""
    if not local_url:
        return text
    parts = urlsplit(local_url)
    host, port = parts.hostname or "", parts.port
    if not host or port is None:
        return text
    for form in (f"{host}:{port}", f"('{host}', {port})", local_url):
        text = text.replace(form, place)
    return text


def lost_point(spec: PointSpec, reason: str) -> PointResult:
    """The point the engine was lost in: not measured, and why."""
    return PointResult(spec, None, flags=(Flag(FlagKind.ERRORS, f"not measured: {reason}"),))


def partial_reason(
    lost_at: PointSpec, reason: str, planned: Sequence[PointSpec], done: Sequence[PointSpec]
) -> str:
    """The PARTIAL line of a sweep that lost its engine: where, why, and every point it did not
    measure."""
    missing = [p.label for p in planned if p not in done or p == lost_at]
    return f"engine lost at {lost_at.label}: {reason}; not measured: {', '.join(missing)}"
