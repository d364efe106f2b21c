"""`cockpit serve`'s doors, with the real command on a simulated fleet and websockets that are no
browser (test_serve_browser.py drives Chromium): another site's page gets 403 before any app
process starts; one viewer more than `--max-viewers` is told why; four viewers hold the nodes'
SSH connections of one (the sessions read the serve process's one feed); `--allow-remote`
serves nobody without the token, which is in a file only its user reads and in no output."""

from __future__ import annotations

import asyncio
import stat
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import aiohttp
import pytest

from cockpit_sim.fleet import SimFleet
from tests.cli_runner import assert_refused, run_cockpit, run_main
from tests.tui.served import (
    Viewer,
    apps,
    descendants,
    free_port,
    serve_argv,
    ssh_connections,
    wait_port,
)

NODES = ["dgx1", "dgx2"]
SHOWN_S = 90  # a viewer's first live rows: a TUI process started on a busy 2-core machine


def _serving(
    processes: Callable[..., subprocess.Popen[bytes]],
    fleet: SimFleet,
    listen: str,
    *options: str,
) -> subprocess.Popen[bytes]:
    server = processes("serve", *serve_argv(fleet, listen, *options))
    host, port = listen.rsplit(":", 1)
    wait_port(int(port), server, 60, host)
    return server


async def _steady_connections(fleet: SimFleet, settle_s: float = 3.0) -> dict[str, int]:
    """The nodes' connection counts once they stayed the same for `settle_s`."""
    seen = ssh_connections(fleet)
    still = time.monotonic()
    while time.monotonic() - still < settle_s:
        await asyncio.sleep(0.5)
        now = ssh_connections(fleet)
        if now != seen:
            seen, still = now, time.monotonic()
    return seen


@pytest.mark.slow
async def test_another_sites_page_and_another_host_name_are_refused_before_any_app(
    small_fleet: SimFleet, processes: Callable[..., subprocess.Popen[bytes]]
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = _serving(processes, small_fleet, f"127.0.0.1:{port}")
    for origin in ("http://evil.example", f"http://127.0.0.1:{port + 1}", "null"):
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await Viewer.open(base, origin)
        assert refused.value.status == 403, origin
    async with aiohttp.ClientSession() as http:  # a page of a name rebound to 127.0.0.1
        async with http.get(f"{base}/", headers={"Host": f"evil.example:{port}"}) as page:
            assert page.status == 421
        rebound = {"Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"}
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await http.ws_connect(f"{base}/ws", headers=rebound)
        assert refused.value.status == 421
    await asyncio.sleep(1)
    assert descendants(server.pid) == {}
    assert ssh_connections(small_fleet) == dict.fromkeys(NODES, 0)  # nobody watches: no feed


@pytest.mark.slow
async def test_one_viewer_beyond_the_cap_is_told_why_and_starts_nothing(
    small_fleet: SimFleet, processes: Callable[..., subprocess.Popen[bytes]]
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = _serving(processes, small_fleet, f"127.0.0.1:{port}", "--max-viewers", "1")
    first = await Viewer.open(base)
    try:
        await first.shows_nodes(NODES, SHOWN_S)
        one = apps(server)
        extra = await Viewer.open(base)
        await asyncio.wait_for(extra.reader, 10)
        assert extra.ws.close_code == aiohttp.WSCloseCode.TRY_AGAIN_LATER
        reason = "all 1 viewers taken (--max-viewers): try again when one closes"
        assert extra.close_reason == reason and extra.text() == ""
        await extra.close()
        async with aiohttp.ClientSession() as http, http.get(f"{base}/") as page:
            assert page.status == 503 and (await page.text()).strip() == reason
        assert apps(server) == one
    finally:
        await first.close()


@pytest.mark.slow
async def test_four_viewers_hold_the_nodes_connections_of_one(
    small_fleet: SimFleet, processes: Callable[..., subprocess.Popen[bytes]]
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = _serving(processes, small_fleet, f"127.0.0.1:{port}")
    viewers = [await Viewer.open(base)]
    try:
        await viewers[0].shows_nodes(NODES, SHOWN_S)
        one = await _steady_connections(small_fleet)
        assert all(one.values()), one
        viewers += [await Viewer.open(base) for _ in range(3)]
        for viewer in viewers[1:]:  # a late viewer's first rows come from the feed's replay
            await viewer.shows_nodes(NODES, SHOWN_S)
        assert len(apps(server)) == 4
        assert await _steady_connections(small_fleet) == one
    finally:
        for viewer in viewers:
            await viewer.close()


@pytest.mark.slow
async def test_allow_remote_serves_nobody_without_the_token(
    small_fleet: SimFleet, processes: Callable[..., subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    host = "127.0.0.2"  # beyond 127.0.0.1, still loopback: nothing leaves this machine
    port = free_port(host)
    base = f"http://{host}:{port}"
    server = _serving(processes, small_fleet, f"{host}:{port}", "--allow-remote")
    token_file = tmp_path / "state" / f"serve-{host}-{port}.token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    token = token_file.read_text().strip()
    assert len(token) >= 40
    said = (tmp_path / "serve.log").read_text()
    assert f"serving {base}: the fleet's read-only view (nodes, lanes" in said
    assert "the lane containers' logs) to at most 8 viewers at once" in said
    assert f"whoever has the token in {token_file}" in said
    assert token not in said

    async with aiohttp.ClientSession() as http:
        for query in ("", "?token=", f"?token={token[:-1]}"):
            async with http.get(f"{base}/{query}", allow_redirects=False) as page:
                assert page.status == 401, query
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await Viewer.open(base)
    assert refused.value.status == 401
    assert descendants(server.pid) == {}

    jar = aiohttp.CookieJar(unsafe=True)  # an IP address's cookies kept, as a browser keeps them
    async with aiohttp.ClientSession(cookie_jar=jar) as http:
        async with http.get(f"{base}/?token={token}", allow_redirects=False) as given:
            assert given.status == 303 and given.headers["Location"] == "/"
            cookie = given.cookies["cockpit_view"]
            assert cookie["httponly"] and cookie["samesite"] == "Strict"
        async with http.get(f"{base}/") as page:
            assert page.status == 200 and f"ws://{host}:{port}/ws" in await page.text()
    viewer = await Viewer.open(base, Cookie=f"cockpit_view={token}")
    try:
        await viewer.shows_nodes(NODES, SHOWN_S)
    finally:
        await viewer.close()
    assert token not in (tmp_path / "serve.log").read_text()


def test_what_the_shared_feed_could_not_connect_with_is_refused_before_serving(
    small_fleet: SimFleet,
) -> None:
    """The sessions have no SSH of their own to fail with: an unreadable known_hosts is `serve`'s
    one-line refusal, before it listens, not a feed that never shows a node."""
    small_fleet.known_hosts.rename(small_fleet.known_hosts.with_suffix(".away"))
    result = run_cockpit(
        "--inventory", str(small_fleet.root), "serve", "--listen", f"127.0.0.1:{free_port()}"
    )
    assert result.returncode == 2 and result.stdout == ""
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and "ssh.known_hosts: known_hosts file" in line


@pytest.mark.parametrize("value", ["0", "-1", "65", "nan", "two"])
def test_a_viewer_cap_out_of_range_is_refused_in_one_line(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_refused(run_main("serve", "--max-viewers", value, capsys=capsys), "--max-viewers")
