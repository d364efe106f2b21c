"""One llama-benchy process: its command line, its output read live, its book, its stop.

Apart from the driver (what the events mean) so what runs the client and how it is ended can be
read on its own: a hung process gets SIGINT (llama-benchy saves partial results on it), and no
client is ever left running.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import signal
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cockpit.bench.benchy_progress import parse_progress_line
from cockpit.bench.driver import DriverConfig
from cockpit.bench.models import PointSpec
from cockpit.bench.prompts import book_text
from cockpit.bench.watch import Watchdog
from cockpit.errors import InputError

if TYPE_CHECKING:
    from aiohttp import web


KEY_ENV = "COCKPIT_BENCHY_API_KEY"
"""How a lane's API key reaches llama-benchy: its environment (see `key_launcher`)."""
_RUN_WITH_KEY = (
    "import os, runpy, sys\n"
    "kind, target, *args = sys.argv[1:]\n"
    f"sys.argv = [target, *args, '--api-key', os.environ.pop({KEY_ENV!r})]\n"
    "if kind == 'module':\n"
    "    runpy.run_module(target, run_name='__main__', alter_sys=True)\n"
    "else:\n"
    "    runpy.run_path(target, run_name='__main__')\n"
)


def key_launcher(exe: Sequence[str]) -> list[str]:
    """The words that start llama-benchy (`exe`) so that it gets `--api-key` without the key on
    any command line: llama-benchy takes the key only as that option, which `ps` shows every
    user of the machine. Its own interpreter runs a few lines that append the option, read from
    KEY_ENV, to its argv inside the process. `exe` is `PYTHON -m MODULE` or a Python script (the
    console script pip writes); anything else is refused."""
    if len(exe) == 3 and exe[1] == "-m":
        return [exe[0], "-c", _RUN_WITH_KEY, "module", exe[2]]
    if len(exe) == 1:
        try:
            with open(exe[0], encoding="utf-8", errors="replace") as script:
                first = script.readline()
        except OSError as exc:
            raise InputError(f"llama-benchy at {exe[0]}: {exc.strerror}") from None
        words = shlex.split(first[2:]) if first.startswith("#!") else []
        if any(Path(w).name.startswith("python") for w in words):
            return [*words, "-c", _RUN_WITH_KEY, "path", exe[0]]
    raise InputError(
        f"llama-benchy as {shlex.join(exe)} is not a Python script: the lane's API key could "
        "reach it only on its command line; use the one the bench extra installs"
    )


def benchy_argv(
    cfg: DriverConfig, points: Sequence[PointSpec], book_url: str, result: Path
) -> list[str]:
    """One llama-benchy command line for points sharing pp, tg and mode (it runs the grid); with
    an API key, started by `key_launcher` (the key itself goes in KEY_ENV)."""
    first = points[0]
    argv = [
        *(key_launcher(cfg.exe) if cfg.api_key else cfg.exe),
        "--base-url", f"{cfg.base_url}/v1",
        "--model", cfg.model,
        "--tokenizer", str(cfg.tokenizer_dir),
        "--book-url", book_url,
        "--pp", str(first.pp),
        "--tg", str(first.tg),
        "--depth", *(str(d) for d in sorted({p.depth for p in points})),
        "--concurrency", *(str(c) for c in sorted({p.concurrency for p in points})),
        "--runs", str(cfg.runs),
        "--latency-mode", cfg.latency_mode,
        "--skip-coherence",
        "--save-result", str(result),
        "--format", "json",
        "--emit-progress", "-",
    ]  # fmt: skip
    if not cfg.warmup:
        argv.append("--no-warmup")
    if not cfg.adapt_prompt:
        argv.append("--no-adapt-prompt")
    if first.cold:
        argv.append("--no-cache")
    elif any(p.depth > 0 for p in points):
        argv.append("--enable-prefix-caching")  # applies to depth > 0 only
    return argv


def groups(points: Sequence[PointSpec]) -> list[list[PointSpec]]:
    """Points split by (pp, tg, cold), each group one llama-benchy invocation, order kept."""
    out: dict[tuple[int, int, bool], list[PointSpec]] = {}
    for p in points:
        out.setdefault((p.pp, p.tg, p.cold), []).append(p)
    return list(out.values())


async def progress_events(
    proc: asyncio.subprocess.Process, watchdog: Watchdog, stderr_tail: list[str]
) -> AsyncIterator[dict[str, Any]]:
    """Progress events from stdout (stderr kept as a tail) until exit or the watchdog fires."""
    assert proc.stdout is not None and proc.stderr is not None
    queue: asyncio.Queue[tuple[str, str | None]] = asyncio.Queue()

    async def pump(name: str, stream: asyncio.StreamReader) -> None:
        async for raw in stream:
            await queue.put((name, raw.decode(errors="replace").rstrip("\n")))
        await queue.put((name, None))

    pumps = [
        asyncio.create_task(pump("out", proc.stdout)),
        asyncio.create_task(pump("err", proc.stderr)),
    ]
    open_streams = 2
    try:
        while open_streams:
            try:
                async with asyncio.timeout(0.2):
                    name, line = await queue.get()
            except TimeoutError:
                if watchdog.hung():
                    return
                continue
            if line is None:
                open_streams -= 1
                continue
            watchdog.touch()
            if name == "err":
                stderr_tail[:] = [*stderr_tail[-19:], line]
                continue
            event = parse_progress_line(line)
            if event is not None:
                yield event
    finally:
        for task in pumps:
            task.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)


async def serve_book() -> tuple[web.AppRunner, str]:
    """Our corpus on loopback for `--book-url` (llama-benchy downloads its prompt text)."""
    from aiohttp import web  # only llama-benchy runs need it; importing it costs ~0.25 s

    text = book_text()

    async def book(_: web.Request) -> web.Response:
        return web.Response(text=text)

    app = web.Application()
    app.router.add_get("/book.txt", book)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}/book.txt"


async def interrupt(proc: asyncio.subprocess.Process, grace: float = 10.0) -> None:
    """SIGINT, then wait a little for llama-benchy to write what it has."""
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGINT)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(grace):
            await proc.wait()


async def stop(proc: asyncio.subprocess.Process) -> None:
    """Never leave the client running: terminate, then kill."""
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    try:
        async with asyncio.timeout(5.0):
            await proc.wait()
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
