"""What the report records about where the client ran and what it talked to.

The seed's §4 moved its bench client from a WiFi laptop to a wired host because the link skewed
TTFT (pp2048@d0 3,667 t/s wired vs ~2,700 over WiFi): the link is part of every result.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from cockpit.errors import CockpitError

_DEV = re.compile(r"\bdev\s+(\S+)")
STATUS_PATH = "/v1/sparkring/status/view"


def route_device(ip_route_get: str) -> str | None:
    """The interface in `ip -o route get ADDR` output."""
    match = _DEV.search(ip_route_get)
    return match.group(1) if match else None


def link_kind(device: str, sys_class_net: Path = Path("/sys/class/net")) -> str:
    """`loopback`, `wifi` or `wired` (with its speed when the kernel knows it)."""
    if device == "lo":
        return "loopback"
    base = sys_class_net / device
    if (base / "wireless").exists() or (base / "phy80211").exists():
        return f"wifi ({device})"
    try:
        speed = int((base / "speed").read_text().strip())
    except (OSError, ValueError):
        speed = -1
    return f"wired ({device}, {speed} Mb/s)" if speed > 0 else f"wired ({device})"


def client_link(host: str) -> str:
    """How this host reaches `host`: the route's interface and its kind."""
    try:
        addr = socket.gethostbyname(host)
    except OSError:
        return "unknown (host does not resolve)"
    exe = shutil.which("ip")
    if exe is None:
        return "loopback" if addr.startswith("127.") else "unknown (no `ip` tool)"
    try:
        out = subprocess.run(
            [exe, "-o", "route", "get", addr], capture_output=True, text=True, timeout=5
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    device = route_device(out)
    return link_kind(device) if device else "unknown"


def client_facts(base_url: str) -> dict[str, str]:
    """This host's name and its link to the engine at `base_url`."""
    return {"host": socket.gethostname(), "link": client_link(urlsplit(base_url).hostname or "")}


async def engine_status(http: httpx.AsyncClient, base_url: str) -> dict[str, object]:
    """The runtime status endpoint (SparkRing's, and the simulator's), {} when absent."""
    try:
        resp = await http.get(f"{base_url}{STATUS_PATH}", timeout=5.0)
        data = resp.json() if resp.status_code == 200 else {}
    except (httpx.HTTPError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class EngineUnanswered(CockpitError):
    """The engine's first answer (`GET /v1/models`) did not come, or was not an OpenAI-compatible
    server's: nothing listens there, the connection dropped, or something else serves the port.
    The reason is one line; the command says which lane or endpoint it was."""


def unanswered(exc: httpx.HTTPError) -> str:
    """An HTTP failure as one line: the status of a refused request, or what the transport said."""
    if isinstance(exc, httpx.HTTPStatusError):
        return f"HTTP {exc.response.status_code} from {exc.request.url.path}"
    first = str(exc).strip().splitlines()
    return first[0] if first else f"the connection dropped ({type(exc).__name__})"


async def served_models(http: httpx.AsyncClient, base_url: str) -> list[dict[str, object]]:
    """The entries of `GET /v1/models` (vLLM's carry `max_model_len`)."""
    try:
        resp = await http.get(f"{base_url}/v1/models")
        resp.raise_for_status()
        body = resp.json()
    except httpx.HTTPError as exc:
        raise EngineUnanswered(unanswered(exc)) from None
    except ValueError:  # a page, not JSON
        raise EngineUnanswered("/v1/models did not answer JSON (not an OpenAI API?)") from None
    data = body.get("data") if isinstance(body, dict) else None
    return [m for m in data if isinstance(m, dict)] if isinstance(data, list) else []
