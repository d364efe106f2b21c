"""The TUI in a browser: textual-serve's server, one app process per browser session.

`cockpit serve` runs it with the read-only TUI's command line. This module adds its doors:
- a websocket (what starts an app process) must come from the server's own page: its `Origin`
  names the address it was sent to, or it gets 403 before anything starts (another site's page
  open in the same browser cannot read the fleet);
- on a loopback address the `Host` must be one of this host's names for it (a DNS rebinding
  page cannot pass as same-origin);
- at most `max_viewers` sessions at once; one more gets a page (or a websocket close) saying so;
- with a `token` (`--allow-remote`), every request needs it: `?token=` once, which sets an
  HttpOnly cookie, then the cookie;
- every session's app reads the `FeedHub` this server runs (`cockpit.tui.feeds.shared`): the
  nodes see one set of SSH connections, whatever the number of viewers.
And what an operator's Ctrl-C (or a SIGTERM) needs: the browser sessions are closed at once, so
each app quits and the server ends, instead of aiohttp waiting a minute for the open websockets;
the server's exit code is 128 + the signal, as every other command's. The page asks nothing of
another address (textual-serve's template fetches a font from Google Fonts: left out, the
browser's own monospace font stands in), and it connects back to the address it was loaded from.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import re
import signal
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any
from urllib.parse import urlsplit

import aiohttp_jinja2
import jinja2
from aiohttp import WSCloseCode, web
from aiohttp.web_runner import GracefulExit
from textual_serve.server import Server, to_int

from cockpit.tui.feeds.shared import FeedHub

COOKIE = "cockpit_view"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
TOKEN_VALUE = re.compile(r"token=[^&\s\"]*")
EXTERNAL_LINK = re.compile(r"<link\b[^>]*\bhref=\"https?://[^\"]*\"[^>]*>\s*", re.IGNORECASE)


class LocalOnly(jinja2.FileSystemLoader):
    """textual-serve's templates without the `<link>`s to other hosts."""

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str | None, object]:
        source, filename, uptodate = super().get_source(environment, template)
        return EXTERNAL_LINK.sub("", source), filename, uptodate


def same_origin(origin: str | None, host: str) -> bool:
    """Whether a request's `Origin` is the page of the address (`Host`) it was sent to."""
    if not origin:
        return False
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and parts.netloc.lower() == host.lower()


def loopback_hosts(host: str, port: int) -> frozenset[str]:
    """The `Host` values a browser on this machine sends to a loopback `host:port`."""
    bound = f"[{host}]" if ":" in host else host
    return frozenset(f"{name}:{port}" for name in (*LOOPBACK_NAMES, bound))


def token_matches(given: str | None, token: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class TokenHidden(logging.Filter):
    """The access log's lines without a `token=` value (a request's address holds it once)."""

    def filter(self, record: logging.LogRecord) -> bool:
        line = record.getMessage()
        if "token=" in line:
            record.msg, record.args = TOKEN_VALUE.sub("token=(hidden)", line), None
        return True


class WebServer(Server):
    """textual-serve's `Server` with the doors above; its shutdown ends the open sessions."""

    def __init__(
        self,
        command: str,
        *,
        host: str,
        port: int,
        title: str,
        hub: FeedHub,
        max_viewers: int,
        token: str | None = None,
        hosts: frozenset[str] | None = None,
    ) -> None:
        """`hosts`: the `Host` values served (None: any, e.g. beyond loopback with a token)."""
        super().__init__(command, host=host, port=port, title=title)
        self.hub = hub
        self.max_viewers = max_viewers
        self.token = token
        self.hosts = hosts
        self._sessions: set[asyncio.Task[object]] = set()
        self._hub_open = AsyncExitStack()
        self.exit_code = 0
        """128 + the signal that stopped the server; 0 while it runs."""

    def initialize_logging(self) -> None:
        """textual-serve's log (a line per request), no token in it."""
        super().initialize_logging()
        logging.getLogger("aiohttp.access").addFilter(TokenHidden())

    @property
    def full(self) -> bool:
        return len(self._sessions) >= self.max_viewers

    def refusal(self) -> str:
        """Why one more viewer is refused: short enough for a websocket's close reason."""
        return f"all {self.max_viewers} viewers taken (--max-viewers): try again when one closes"

    async def _make_app(self) -> web.Application:
        """textual-serve's application (pinned version), its templates read through `LocalOnly`,
        every request through `guard`."""
        app = await super()._make_app()
        aiohttp_jinja2.setup(app, loader=LocalOnly(self.templates_path))
        app.middlewares.append(self.guard)
        return app

    @web.middleware
    async def guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """The `Host` (on loopback) and the token (beyond it), before any handler."""
        if self.hosts is not None and request.host not in self.hosts:
            raise web.HTTPMisdirectedRequest(text=f"{request.host!r} is not this server\n")
        if self.token is not None and not token_matches(request.cookies.get(COOKIE), self.token):
            if not token_matches(request.query.get("token"), self.token):
                raise web.HTTPUnauthorized(
                    text="this cockpit web view needs its token: open it as "
                    "http://HOST:PORT/?token=... (the token is in the file `cockpit serve` named)\n"
                )
            if request.path == "/":  # the token leaves the address bar (and its history)
                found = web.HTTPSeeOther("/")
                found.set_cookie(COOKIE, self.token, httponly=True, samesite="Strict", path="/")
                raise found
        return await handler(request)

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        """textual-serve's page, its websocket and static addresses those the browser used (not
        the listen address: `0.0.0.0` is no address to connect to); a page saying so when the
        server has its most viewers."""
        if self.full:
            return web.Response(status=503, text=self.refusal() + "\n")
        base = f"{request.scheme}://{request.host}"
        socket_scheme = "wss" if request.scheme == "https" else "ws"
        context: dict[str, Any] = {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            "app_websocket_url": f"{socket_scheme}://{request.host}/ws",
            "config": {"static": {"url": f"{base}/static/"}},
            "application": {"name": self.title},
        }
        return aiohttp_jinja2.render_template("app_index.html", request, context)

    async def on_startup(self, app: web.Application) -> None:
        """textual-serve's banner, the shared feed's socket, then signal handlers that remember
        which signal it was."""
        await super().on_startup(app)
        await self._hub_open.enter_async_context(self.hub)
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, self._stop, signum)

    def _stop(self, signum: int) -> None:
        self.exit_code = 128 + signum
        raise GracefulExit()

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """One browser session: its app process lives as long as this handler. Another site's
        page gets 403, one more than `max_viewers` a close saying why, before any process."""
        if not same_origin(request.headers.get("Origin"), request.host):
            raise web.HTTPForbidden(text="a websocket from another site's page is refused\n")
        if self.full:
            refused = web.WebSocketResponse()
            await refused.prepare(request)
            await refused.close(code=WSCloseCode.TRY_AGAIN_LATER, message=self.refusal().encode())
            return refused
        task = asyncio.current_task()
        assert task is not None
        self._sessions.add(task)
        try:
            return await super().handle_websocket(request)
        finally:
            self._sessions.discard(task)

    async def on_shutdown(self, app: web.Application) -> None:
        """Cancel every session (textual-serve then tells its app to quit and waits for it),
        then stop the shared feed."""
        sessions = list(self._sessions)
        for task in sessions:
            task.cancel()
        await asyncio.gather(*sessions, return_exceptions=True)
        await self._hub_open.aclose()
