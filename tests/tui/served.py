"""Running `cockpit serve` as a process and watching what it does: its port, its app processes
(/proc), the TCP connections to each node's SSH address, websocket viewers that are no browser.

The tests of `cockpit serve` and benchmarks/web_viewers.py share these."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import aiohttp

from cockpit_sim.fleet import SimFleet

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-B]|\x1b[=>]")
NODE_ROW = (  # the Nodes pane's row: link, lane, GPU %, unified memory, temperature, power, clock
    r"{node}\s+up\s+\S+\s+\d+%\s+[\d.]+/[\d.]+G UMA\s+\d+°C\s+\d+W\s+\d+MHz"
)
ENDED = (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSING, aiohttp.WSMsgType.CLOSED)
ESTABLISHED = "01"
WIDTH, HEIGHT = 160, 48  # a viewer's window, in cells
REPAINT_S = 10.0  # /proc/net/tcp's state column


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def serve_argv(fleet: SimFleet, listen: str, *options: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "cockpit",
        "--inventory",
        str(fleet.root),
        "serve",
        "--listen",
        listen,
        *options,
    ]


def wait_port(
    port: int, proc: subprocess.Popen[bytes], timeout: float, host: str = "127.0.0.1"
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"cockpit serve exited with {proc.returncode}")
        with socket.socket() as probe:
            if probe.connect_ex((host, port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError(f"nothing listens on {host}:{port} after {timeout} s")


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """TERM to the process's group (its own session: its children too), then KILL to whatever
    is left of it; reaped."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=15)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def start_in_session(log: Path, argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    """`argv` in a session of its own (`kill_group` ends it with its children), output to `log`."""
    with log.open("wb") as out:
        return subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )


def descendants(pid: int) -> dict[int, list[str]]:
    """Every descendant of `pid` with its command line (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat.rpartition(")")[2].split()[1])
    found: dict[int, list[str]] = {}
    todo = [pid]
    while todo:
        parent = todo.pop()
        for child, ppid in parents.items():
            if ppid == parent:
                todo.append(child)
                with contextlib.suppress(OSError):
                    raw = (Path("/proc") / str(child) / "cmdline").read_bytes()
                    found[child] = [a.decode() for a in raw.split(b"\0") if a]
    return found


def apps(server: subprocess.Popen[bytes]) -> dict[int, list[str]]:
    """The served TUI processes under `server`."""
    return {pid: argv for pid, argv in descendants(server.pid).items() if "tui" in argv}


def _hex_address(host: str, port: int) -> str:
    """An IPv4 address as /proc/net/tcp writes it (the address in host byte order, little end)."""
    packed = socket.inet_aton(host)
    return f"{int.from_bytes(packed, 'little'):08X}:{port:04X}"


def ssh_connections(fleet: SimFleet) -> dict[str, int]:
    """Established TCP connections to each node's SSH address, whoever opened them."""
    remote = {_hex_address(n.host, n.port): n.name for n in fleet.nodes}
    counts = dict.fromkeys(remote.values(), 0)
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == ESTABLISHED and fields[2] in remote:
            counts[remote[fields[2]]] += 1
    return counts


class Viewer:
    """A websocket to `cockpit serve` as its page opens it (its own Origin), no browser: what
    the app process sends, read as text."""

    def __init__(self, http: aiohttp.ClientSession, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.http = http
        self.ws = ws
        self.received: list[bytes] = []
        self.close_reason = ""
        self.height = HEIGHT
        self.reader = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, base: str, origin: str | None = None, **headers: str) -> Viewer:
        http = aiohttp.ClientSession()
        try:
            ws = await http.ws_connect(
                f"{base}/ws?width={WIDTH}&height={HEIGHT}",
                headers={"Origin": origin or base, **headers},
                max_msg_size=0,
            )
        except BaseException:
            await http.close()
            raise
        return cls(http, ws)

    async def _read(self) -> None:
        while (msg := await self.ws.receive()).type not in ENDED:
            data = msg.data
            self.received.append(data if isinstance(data, bytes) else str(data).encode())
        self.close_reason = str(msg.extra or "")

    def text(self) -> str:
        return ANSI.sub(" ", b"".join(self.received).decode("utf-8", "replace"))

    async def shows_nodes(self, nodes: list[str], timeout: float) -> None:
        """Until the app's frames hold every node's live row. The app sends only the cells that
        changed: a row first drawn without its figures may never be sent whole, so every
        `REPAINT_S` the window's height changes by a line, and the app draws the screen anew."""
        rows = [re.compile(NODE_ROW.format(node=n)) for n in nodes]
        deadline = time.monotonic() + timeout
        repaint = time.monotonic() + REPAINT_S
        while not all(row.search(self.text()) for row in rows):
            if time.monotonic() > deadline:
                raise AssertionError(f"no live node rows: {self.text()[-2000:]}")
            if self.reader.done():
                raise AssertionError(f"the websocket closed: {self.ws.close_code} {self.text()}")
            if time.monotonic() > repaint:
                self.height = HEIGHT + 1 if self.height == HEIGHT else HEIGHT
                await self.ws.send_json(["resize", {"width": WIDTH, "height": self.height}])
                repaint = time.monotonic() + REPAINT_S
            await asyncio.sleep(0.5)

    async def close(self) -> None:
        await self.ws.close()
        self.reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.reader
        await self.http.close()
