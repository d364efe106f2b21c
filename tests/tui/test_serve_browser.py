"""`cockpit serve` in a real headless Chromium, on a simulated fleet.

What this proves: the real command (a subprocess, on loopback) serves textual-serve's page;
no app runs before a browser connects; a page of another origin (another loopback port) whose
script opens the web view's websocket in this Chromium gets an error, and no app starts;
Chromium loads the page, and its websocket makes the server start a `cockpit … tui --readonly`
process (read from /proc: a descendant of the server, `--readonly` right after `tui` on its
command line); what that process sends the browser (the
websocket frames Chromium received, read over the DevTools protocol) holds the Nodes pane's rows
of both nodes, each up with GPU %, unified memory, temperature, power and clock from the nodes'
probes, and the READ-ONLY title; the node-changing keys typed into the page (`l`, `s`, `y`, `b`,
`w`, then `y` for any confirmation) come back as read-only refusals and no container exists on
any node afterwards; the page's screenshot is 1600×1000 with over 100 colours and at least 10
bright text bands (a drawn terminal, not a blank page); SIGTERM to the server with the browser
still connected ends it with 143 and the app process with it. It does not read xterm.js's
canvas (textual-serve keeps the terminal object private): the text checked is the terminal
stream the page drew from, and the screenshot is checked by its pixels only."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from PIL import Image

from cockpit.cli.serve_cmd import served_command
from cockpit_sim.fleet import SimFleet
from tests.cli_runner import run_cockpit
from tests.tui.served import (
    ANSI,
    NODE_ROW,
    apps,
    descendants,
    free_port,
    serve_argv,
    wait_port,
)

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
WIDTH, HEIGHT = 1600, 1000


def test_a_non_loopback_listen_address_is_refused_in_one_line() -> None:
    result = run_cockpit("serve", "--listen", "10.0.0.1:8765")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: --listen 10.0.0.1:8765 is not a loopback address: add --allow-remote to serve "
        "the fleet's read-only view beyond this host"
    ]


def test_port_0_and_a_taken_port_are_refused_in_one_line() -> None:
    assert run_cockpit("serve", "--listen", "127.0.0.1:0").stderr.strip().splitlines() == [
        "error: --listen 127.0.0.1:0: the web view needs a fixed port, e.g. 127.0.0.1:8765"
    ]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        listen = f"127.0.0.1:{taken.getsockname()[1]}"
        result = run_cockpit("serve", "--listen", listen)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        f"error: --listen {listen}: Address already in use"
    ]


def test_the_page_asks_nothing_of_another_address() -> None:
    """textual-serve's own template links a font on Google Fonts: read through `LocalOnly`, the
    page links nothing beyond the server."""
    import jinja2
    import textual_serve

    from cockpit.tui.web import LocalOnly

    templates = Path(textual_serve.__file__).parent / "templates"
    upstream = (templates / "app_index.html").read_text()
    assert "https://fonts.googleapis.com" in upstream  # what is left out, still there upstream
    page, _, _ = LocalOnly(templates).get_source(jinja2.Environment(), "app_index.html")
    fetched = re.findall(r"""(?:href|src)\s*=\s*["']([^"']*)""", page)  # an svg's xmlns is no fetch
    assert fetched and not [url for url in fetched if "://" in url], fetched
    assert "xterm.css" in page  # the rest of the page is whole


def test_the_served_command_is_the_readonly_tui_on_the_same_inventory(tmp_path: Path) -> None:
    argv = shlex.split(served_command(tmp_path / "inv", Path("reports"), tmp_path / "f.sock"))
    assert argv[:3] == [sys.executable, "-m", "cockpit"]
    assert argv[3:5] == ["--inventory", str((tmp_path / "inv").resolve())]
    assert argv[5:9] == ["tui", "--readonly", "--feed-socket", str(tmp_path / "f.sock")]


class Page:
    """One Chromium tab over the DevTools protocol: navigate, type, read the websocket frames it
    received, take a screenshot."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.next_id = 0
        self.frames: list[bytes] = []
        self.replies: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for msg in self.ws:
            data = json.loads(msg.data)
            if "id" in data and data["id"] in self.replies:
                self.replies.pop(data["id"]).set_result(data)
            elif data.get("method") == "Network.webSocketFrameReceived":
                response = data["params"]["response"]
                payload = response["payloadData"]
                raw = base64.b64decode(payload) if response["opcode"] == 2 else payload.encode()
                self.frames.append(raw)

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        reply: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.replies[self.next_id] = reply
        await self.ws.send_json({"id": self.next_id, "method": method, "params": params})
        answer = await asyncio.wait_for(reply, 30)
        assert "error" not in answer, answer
        return answer.get("result", {})

    def text(self) -> str:
        """Everything the page received from the app, escape sequences taken out."""
        return ANSI.sub(" ", b"".join(self.frames).decode("utf-8", "replace"))

    async def type(self, key: str) -> None:
        await self.call("Input.dispatchKeyEvent", type="keyDown", key=key, text=key)
        await self.call("Input.dispatchKeyEvent", type="keyUp", key=key)


async def _devtools_page(port: int) -> tuple[aiohttp.ClientSession, Page]:
    session = aiohttp.ClientSession()
    async with session.get(f"http://127.0.0.1:{port}/json/list") as resp:
        targets = await resp.json(content_type=None)
    target = next(t for t in targets if t["type"] == "page")
    ws = await session.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0)
    return session, Page(ws)


def _devtools_port(profile: Path, chromium: subprocess.Popen[bytes]) -> int:
    marker = profile / "DevToolsActivePort"
    deadline = time.monotonic() + 30
    while not marker.exists() or not marker.read_text().strip():
        assert chromium.poll() is None, "chromium exited"
        assert time.monotonic() < deadline, "chromium opened no DevTools port"
        time.sleep(0.2)
    return int(marker.read_text().split()[0])


FOREIGN_PAGE = """<html><body><script>
window.verdict = "pending";
const ws = new WebSocket("ws://127.0.0.1:{port}/ws?width=80&height=24");
ws.onopen = () => {{ window.verdict = "open"; }};
ws.onerror = () => {{ if (window.verdict === "pending") window.verdict = "refused"; }};
</script></body></html>"""


async def _foreign_page_verdict(page: Page, port: int) -> str:
    """What a page of another origin (another loopback port) got when its script opened the
    web view's websocket in this Chromium: "open", "refused" or still "pending"."""

    async def index(_: web.Request) -> web.Response:
        return web.Response(text=FOREIGN_PAGE.format(port=port), content_type="text/html")

    foreign = web.Application()
    foreign.router.add_get("/", index)
    runner = web.AppRunner(foreign)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", free_port())
        await site.start()
        await page.call("Page.navigate", url=site.name + "/")
        return str(await _evaluated(page, "window.verdict", lambda v: v in ("open", "refused")))
    finally:
        await runner.cleanup()


async def _chromium_page(
    processes: Callable[..., subprocess.Popen[bytes]], tmp_path: Path
) -> tuple[aiohttp.ClientSession, Page]:
    """Headless Chromium (loopback only) and its tab over DevTools, network and page events on."""
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is not installed (.ci/run installs it)")
    profile = tmp_path / "chromium-profile"
    chromium = processes(
        "chromium",
        CHROMIUM,
        "--headless=new",
        "--no-sandbox",  # the tests run as root
        "--disable-gpu",
        # loopback only, whatever asks (an IP address is looked up too: each one named)
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE 127.0.0.2",
        f"--window-size={WIDTH},{HEIGHT}",
        f"--user-data-dir={profile}",
        "--remote-debugging-address=127.0.0.1",
        "--remote-debugging-port=0",
        "about:blank",
    )
    devtools = await asyncio.to_thread(_devtools_port, profile, chromium)
    session, page = await _devtools_page(devtools)
    await page.call("Network.enable")
    await page.call("Page.enable")
    await page.call(
        "Emulation.setDeviceMetricsOverride",
        width=WIDTH,
        height=HEIGHT,
        deviceScaleFactor=1,
        mobile=False,
    )
    return session, page


async def _live_rows(page: Page, nodes: tuple[str, ...] = ("dgx1", "dgx2")) -> str:
    """The page's terminal stream once it holds every node's live row."""
    deadline = time.monotonic() + 90
    rows = [re.compile(NODE_ROW.format(node=n)) for n in nodes]
    while True:
        text = page.text()
        if all(row.search(text) for row in rows):
            return text
        assert time.monotonic() < deadline, f"no live node rows in the page: {text[-3000:]}"
        await asyncio.sleep(0.5)


async def _evaluated(page: Page, expression: str, until: Callable[[Any], bool]) -> Any:
    """The value of `expression` in the page once `until` holds for it (20 s at most)."""
    deadline = time.monotonic() + 20
    while True:
        answer = await page.call("Runtime.evaluate", expression=expression)
        value = answer.get("result", {}).get("value")
        if until(value) or time.monotonic() > deadline:
            return value
        await asyncio.sleep(0.2)


def _containers(fleet: SimFleet) -> str:
    """`docker ps -a` of every node, as the fleet's own SSH config reaches them."""
    out = []
    for node in fleet.nodes:
        ssh = ["ssh", "-F", str(fleet.root / "ssh_config"), node.name, "docker ps -aq"]
        out.append(subprocess.run(ssh, capture_output=True, text=True, timeout=30).stdout)
    return "".join(out).strip()


@pytest.mark.slow
async def test_headless_chromium_shows_the_readonly_nodes_pane_with_live_figures(
    fleet_factory: Callable[..., SimFleet],
    processes: Callable[..., subprocess.Popen[bytes]],
    tmp_path: Path,
) -> None:
    fleet = fleet_factory(2)
    port = free_port()
    server = processes("serve", *serve_argv(fleet, f"127.0.0.1:{port}"))
    await asyncio.to_thread(wait_port, port, server, 60)
    assert descendants(server.pid) == {}  # no app before a browser connects

    session, page = await _chromium_page(processes, tmp_path)
    try:
        assert await _foreign_page_verdict(page, port) == "refused"
        assert descendants(server.pid) == {}  # another site's page started nothing

        await page.call("Page.navigate", url=f"http://127.0.0.1:{port}/")
        text = await _live_rows(page)
        (tmp_path / "page.txt").write_text(text)  # beside the screenshot, to look at

        served = apps(server)
        assert served, "no app process for the browser session"
        assert all(c[c.index("tui") + 1] == "--readonly" for c in served.values()), served
        assert "READ-ONLY" in text

        await asyncio.sleep(2)  # a few more frames: the figures painted
        shot = await page.call("Page.captureScreenshot", format="png")
        (tmp_path / "nodes.png").write_bytes(base64.b64decode(shot["data"]))

        focus = "document.querySelector('.xterm-helper-textarea').focus()"
        await page.call("Runtime.evaluate", expression=focus)
        before = len(page.frames)
        for key in ("l", "s", "y", "b", "w", "y"):
            await page.type(key)
            await asyncio.sleep(0.3)
        deadline = time.monotonic() + 20
        while b"is disabled (started with --readonly)" not in b"".join(page.frames[before:]):
            assert time.monotonic() < deadline, "the keys were not refused as read-only"
            await asyncio.sleep(0.5)
        await asyncio.sleep(3)  # what a launch would have started by now
        assert _containers(fleet) == ""

        server.send_signal(signal.SIGTERM)  # the browser still connected: its app quits too
        assert await asyncio.to_thread(server.wait, 30) == 128 + signal.SIGTERM
        assert not [pid for pid in served if Path(f"/proc/{pid}").exists()], "an app outlived serve"
    finally:
        page.reader.cancel()
        await page.ws.close()
        await session.close()

    image = Image.open(tmp_path / "nodes.png").convert("RGB")
    assert image.size == (WIDTH, HEIGHT)
    colours = image.getcolors(maxcolors=1 << 20) or []
    assert len(colours) > 100, f"{len(colours)} colours: a blank page"
    grey = image.convert("L").tobytes()  # the dark theme: text is the bright pixels
    bright_rows = [
        sum(p > 128 for p in grey[y * WIDTH : (y + 1) * WIDTH]) > 20 for y in range(HEIGHT)
    ]
    lines = sum(1 for y in range(1, HEIGHT) if bright_rows[y] and not bright_rows[y - 1])
    share = sum(p > 128 for p in grey) / len(grey)
    assert lines >= 10 and 0.002 < share < 0.4, f"{lines} lines of text, {share:.3f} bright"


@pytest.mark.slow
async def test_chromium_reaches_a_view_beyond_loopback_with_its_token_only(
    fleet_factory: Callable[..., SimFleet],
    processes: Callable[..., subprocess.Popen[bytes]],
    tmp_path: Path,
) -> None:
    """`--allow-remote` on 127.0.0.2 (nothing leaves this machine): without the token the page
    is refused and nothing starts; with `?token=` once, Chromium is redirected to `/` holding a
    cookie its scripts cannot read, and its websocket (the cookie sent with it) gets the app."""
    fleet = fleet_factory(2)
    host = "127.0.0.2"
    port = free_port(host)
    base = f"http://{host}:{port}"
    server = processes("serve", *serve_argv(fleet, f"{host}:{port}", "--allow-remote"))
    await asyncio.to_thread(wait_port, port, server, 60, host)
    token = (tmp_path / "state" / f"serve-{host}-{port}.token").read_text().strip()
    session, page = await _chromium_page(processes, tmp_path)
    try:
        await page.call("Page.navigate", url=f"{base}/")
        body = "document.body ? document.body.innerText : ''"
        refused = await _evaluated(page, body, lambda v: bool(v))
        assert "needs its token" in refused
        assert descendants(server.pid) == {}

        await page.call("Page.navigate", url=f"{base}/?token={token}")
        await _live_rows(page)
        assert await _evaluated(page, "location.href", lambda v: True) == f"{base}/"
        assert await _evaluated(page, "document.cookie", lambda v: True) == ""  # HttpOnly
        assert len(apps(server)) == 1
    finally:
        page.reader.cancel()
        await page.ws.close()
        await session.close()
