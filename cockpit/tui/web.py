"""The TUI in a browser: textual-serve's server, one app process per browser session.

`cockpit serve` runs it with the read-only TUI's command line; this module only adds what an
operator's Ctrl-C (or a SIGTERM) needs: the browser sessions are closed at once, so each app
quits and the server ends, instead of aiohttp waiting a minute for the open websockets; the
server's exit code is 128 + the signal, as every other command's; and the page asks nothing of
another address (textual-serve's template fetches a font from Google Fonts: left out, the
browser's own monospace font stands in).
"""

from __future__ import annotations

import asyncio
import re
import signal

import aiohttp_jinja2
import jinja2
from aiohttp import web
from aiohttp.web_runner import GracefulExit
from textual_serve.server import Server

EXTERNAL_LINK = re.compile(r"<link\b[^>]*\bhref=\"https?://[^\"]*\"[^>]*>\s*", re.IGNORECASE)


class LocalOnly(jinja2.FileSystemLoader):
    """textual-serve's templates without the `<link>`s to other hosts."""

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str | None, object]:
        source, filename, uptodate = super().get_source(environment, template)
        return EXTERNAL_LINK.sub("", source), filename, uptodate


class WebServer(Server):
    """textual-serve's `Server`, whose shutdown ends the open browser sessions."""

    def __init__(self, command: str, *, host: str, port: int, title: str) -> None:
        super().__init__(command, host=host, port=port, title=title)
        self._sessions: set[asyncio.Task[object]] = set()
        self.exit_code = 0
        """128 + the signal that stopped the server; 0 while it runs."""

    async def _make_app(self) -> web.Application:
        """textual-serve's application (pinned version), its templates read through `LocalOnly`."""
        app = await super()._make_app()
        aiohttp_jinja2.setup(app, loader=LocalOnly(self.templates_path))
        return app

    async def on_startup(self, app: web.Application) -> None:
        """textual-serve's banner, then signal handlers that remember which signal it was."""
        await super().on_startup(app)
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, self._stop, signum)

    def _stop(self, signum: int) -> None:
        self.exit_code = 128 + signum
        raise GracefulExit()

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """One browser session: its app process lives as long as this handler."""
        task = asyncio.current_task()
        assert task is not None
        self._sessions.add(task)
        try:
            return await super().handle_websocket(request)
        finally:
            self._sessions.discard(task)

    async def on_shutdown(self, app: web.Application) -> None:
        """Cancel every session: textual-serve then tells its app to quit and waits for it."""
        sessions = list(self._sessions)
        for task in sessions:
            task.cancel()
        await asyncio.gather(*sessions, return_exceptions=True)
