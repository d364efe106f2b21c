"""Refuse before acting: a bad value of any option is one line naming it, exit 2, and no SSH
connection is opened (issue 31)."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import asyncssh
import pytest

from cockpit_sim.engine.text import TOKENIZER_DIR
from cockpit_sim.fleet import SimFleet
from tests.cli_runner import RECIPES, assert_refused, run_main

LANE = ("--recipe", "qwen3-0.6b-2x", "--cluster", "2nodes-dac")
SHORT_LANE = ("-r", "qwen3-0.6b-2x", "-c", "2nodes-dac")


@pytest.fixture
def no_ssh(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every SSH connection a command tries, refused and listed (a refusal must open none)."""
    tried: list[str] = []

    async def refuse(host: str, *args: object, **kwargs: object) -> None:
        tried.append(host)
        raise OSError(f"this test opens no SSH connection (tried {host})")

    monkeypatch.setattr(asyncssh, "connect", refuse)
    yield tried


BAD_VALUES = [
    (("bench", *LANE, "--label", "x", "--hang-timeout", "-1"), "--hang-timeout"),
    (("bench", *LANE, "--label", "x", "--hang-timeout", "nan"), "--hang-timeout"),
    (("bench", *LANE, "--label", "x", "--hang-timeout", "0"), "--hang-timeout"),
    (("bench", *LANE, "--label", "x", "--hang-timeout", "inf"), "--hang-timeout"),
    (("bench", *LANE, "--label", "x", "--time-scale", "nan"), "--time-scale"),
    (("bench", *LANE, "--label", "x", "--time-scale", "-inf"), "--time-scale"),
    (("bench", *LANE, "--label", "x", "--runs", "0"), "--runs"),
    (("probe", *LANE, "--tokens", "0"), "--tokens"),
    (("probe", *LANE, "--tokens", "-3"), "--tokens"),
    (("launch", *SHORT_LANE, "--boot-timeout", "-1"), "--boot-timeout"),
    (("launch", *SHORT_LANE, "--boot-timeout", "nan"), "--boot-timeout"),
    (("launch", *SHORT_LANE, "--stall-timeout", "0"), "--stall-timeout"),
    (("launch", *SHORT_LANE, "--ready-watch", "-0.5"), "--ready-watch"),
    (("launch", *SHORT_LANE, "--ready-watch", "inf"), "--ready-watch"),
    (("switch", *SHORT_LANE, "--yes", "--boot-timeout", "1e999"), "--boot-timeout"),
    (("switch", *SHORT_LANE, "--yes", "--stall-timeout", "-inf"), "--stall-timeout"),
    (("logs", "--lane", "qwen3-0.6b-2x", "--rank", "-1"), "--rank"),
    (("sim", "up", "--speed", "nan"), "--speed"),
    (("sim", "up", "--boot-speed", "inf"), "--boot-speed"),
    (("sim", "up", "--link-mbps", "-1"), "--link-mbps"),
]


@pytest.mark.parametrize(("args", "option"), BAD_VALUES)
def test_a_bad_number_is_refused_in_one_line_naming_its_option(
    args: tuple[str, ...], option: str, no_ssh: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert_refused(run_main(*args, capsys=capsys), option)
    assert no_ssh == []


@pytest.mark.parametrize(
    "endpoint", ["file:///etc/passwd", "not a url", "127.0.0.1:30000", "http://[::1", "http://:80"]
)
@pytest.mark.parametrize("command", ["bench", "probe"])
def test_an_endpoint_that_is_no_http_url_is_refused_before_any_request(
    command: str, endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = ("--tokenizer", str(tmp_path), "--label", "x") if command == "bench" else ()
    ran = run_main(command, "--endpoint", endpoint, *extra, capsys=capsys)
    assert_refused(ran, "--endpoint", repr(endpoint))


@pytest.fixture
def hang_up_port() -> Iterator[int]:
    """A loopback port whose server closes every connection unanswered (a lane whose engine is
    gone: its head's forward accepts, then hangs up)."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                conn, _ = server.accept()
                conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


def _closed_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as server:
        return server.getsockname()[1]  # nothing listens once it is closed


@pytest.mark.parametrize("command", ["bench", "probe"])
def test_an_endpoint_that_does_not_answer_is_one_line_and_exit_1(
    command: str, hang_up_port: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = ("--tokenizer", TOKENIZER_DIR, "--label", "x", "--reports", str(tmp_path))
    for url, reasons in [
        (f"http://127.0.0.1:{_closed_port()}", ("All connection attempts failed",)),
        (f"http://127.0.0.1:{hang_up_port}", ("Server disconnected", "the connection dropped")),
    ]:
        ran = run_main(command, "--endpoint", url, *(extra if command == "bench" else ()),
                       capsys=capsys)  # fmt: skip
        lines = ran.stderr.splitlines()
        assert (ran.code, len(lines), ran.stdout) == (1, 1, ""), ran
        said = f"error: the engine at {url} does not answer: "
        assert lines[0].startswith(said) and lines[0].removeprefix(said).startswith(reasons)
        assert "Traceback" not in ran.stderr + ran.stdout


@pytest.mark.parametrize("command", ["bench", "probe"])
def test_a_lane_that_is_not_running_is_named_with_its_head_not_a_local_port(
    command: str, small_fleet: SimFleet, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = ("--label", "x", "--depths", "0", "--concurrency", "1", "--reports", str(tmp_path))
    ran = run_main("--inventory", small_fleet.inventory_dir, command, *LANE,
                   *(extra if command == "bench" else ()), capsys=capsys)  # fmt: skip
    lines = ran.stderr.splitlines()
    assert (ran.code, len(lines), ran.stdout) == (1, 1, ""), ran
    assert lines[0].startswith(
        "error: the engine of qwen3-0.6b-2x on 2nodes-dac (head dgx1; is the lane running? "
        "cockpit status) does not answer: "
    ), lines
    assert "127.0.0.1" not in lines[0] and "Traceback" not in ran.stderr + ran.stdout


def test_a_piped_table_keeps_whole_names() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "COCKPIT_INVENTORY")}
    piped = subprocess.run(
        [sys.executable, "-m", "cockpit", "--inventory", RECIPES, "lanes"],
        capture_output=True, text=True, env=env, timeout=60, check=True,
    )  # fmt: skip
    assert "mimo26-flash-mopd-2x-sparkring " in piped.stdout and "…" not in piped.stdout


@pytest.mark.parametrize(
    ("typed", "hint"),
    [("nope", "(known: "), ("qwen3-0.6b", "(did you mean 'qwen3-0.6b-2x'?)")],
)
def test_stop_of_a_lane_not_in_the_inventory_names_the_nearest(
    typed: str, hint: str, no_ssh: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    ran = run_main("--inventory", RECIPES, "stop", "--lane", typed, capsys=capsys)
    assert_refused(ran, f"--lane: unknown recipe {typed!r} {hint}")
    assert no_ssh == []


@pytest.fixture
def missing_key_inventory(tmp_path: Path) -> Path:
    """The project's inventory whose [ssh] names an identity file that is not there."""
    root = tmp_path / "inventory"
    shutil.copytree(RECIPES, root)
    clusters = root / "clusters.toml"
    text = clusters.read_text()
    clusters.write_text(text.replace("[ssh]\n", '[ssh]\nidentity_files = ["keys/gone"]\n', 1))
    return root


def test_validate_and_status_name_an_identity_file_that_is_not_there(
    missing_key_inventory: Path, no_ssh: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    problem = (
        f"{missing_key_inventory / 'clusters.toml'}:13: ssh.identity_files.0: "
        f"{missing_key_inventory / 'keys' / 'gone'} does not exist"
    )
    validated = run_main("--inventory", missing_key_inventory, "validate", capsys=capsys)
    assert validated.code == 2 and f"error: {problem}" in validated.stderr.splitlines()
    assert_refused(run_main("--inventory", missing_key_inventory, "status", capsys=capsys), problem)
    assert no_ssh == []


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("missing", "holds no tokenizer.json"),
        (".", "holds no tokenizer.json"),
        ("broken.json", "is not a tokenizer (expected value at line 1 column 1)"),
    ],
)
def test_a_tokenizer_that_is_none_is_refused_before_the_sweep(
    given: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "broken.json").write_text("root:x:0:0\n")
    ran = run_main("bench", "--endpoint", "http://127.0.0.1:9", "--tokenizer", tmp_path / given,
                   "--label", "x", "--reports", tmp_path, capsys=capsys)  # fmt: skip
    assert_refused(ran, f"--tokenizer: {tmp_path / given}", said)


def test_an_error_line_prints_what_was_typed_not_an_emoji(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ran = run_main("exporter", "--listen", "127.0.0.1:-1", capsys=capsys)  # `:-1:` is 👎
    assert_refused(ran, "--listen 127.0.0.1:-1: expected HOST:PORT")


@pytest.mark.parametrize("command", ["sync-image", "sync-model"])
def test_a_source_node_not_in_the_inventory_is_refused_before_any_is_asked(
    command: str, no_ssh: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    ran = run_main("--inventory", RECIPES, command, *LANE, "--from", "dgx9", capsys=capsys)
    assert_refused(ran, "--from 'dgx9': not a node of the inventory (dgx1, ")
    assert no_ssh == []
