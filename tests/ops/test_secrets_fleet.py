"""Issue 19, "the secret appears nowhere, including the node's `ps`": a lane with an HF token, a
password and an API key is rendered, dry-run, launched, followed by the TUI store and benched on
the simulated fleet; every output, file and command line is searched for the values. Issue 31:
the API key travels like the HF token (the env file, as VLLM_API_KEY), the engine requires it,
and readiness and the bench pass because the cockpit sends it as a Bearer token."""

from __future__ import annotations

import asyncio
import io
import json
import secrets
import string
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from rich.console import Console

from cockpit.cli.ops_cmds import EventPrinter
from cockpit.config import Inventory, load_inventory
from cockpit.events import Finished, OpEvent
from cockpit.ops.context import OpContext
from cockpit.ops.history import BootHistory
from cockpit.ops.launch import launch
from cockpit.ops.readiness import base_url
from cockpit.ops.stop import stop
from cockpit.plan import plan_lane
from cockpit.ssh import SshPool
from cockpit.ssh.inventory import pool_for
from cockpit.tui.state import RankLines, Store
from cockpit.tui.state.inputs import OpUpdate
from cockpit_sim.fleet import SimFleet
from tests.cli_runner import run_cockpit

LANE = "qwen3-0.6b-2x"
CLUSTER = "2nodes-dac"


def _random(n: int) -> str:
    return "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(n))


@pytest.fixture
def secret_lane(fleet_factory: Callable[..., SimFleet]) -> tuple[SimFleet, dict[str, str]]:
    """A 2-node fleet whose Qwen lane carries three secrets, fresh for every run (parallel runs
    share the host's process list)."""
    fleet = fleet_factory(2, speed=20.0)
    values = {
        "hf": "hf_" + _random(34),  # looks like a token
        "password": "plain" + _random(20),  # looks like nothing: known by name and by value
        "api_key": "sk-" + _random(40),  # the engine requires it of every /v1 request
    }
    path = fleet.inventory_dir / f"{LANE}.toml"
    text = path.read_text()
    text = text.replace(
        "[env]\n",
        f'[env]\nHF_TOKEN = "{values["hf"]}"\nDB_PASSWORD = "{values["password"]}"\n'
        f'VLLM_API_KEY = "{values["api_key"]}"\n',
    )
    path.write_text(text)
    return fleet, values


def record_lines(pool: SshPool) -> list[str]:
    """Every command line the pool sends from now on (what `bash -c` shows in a node's `ps`)."""
    lines: list[str] = []
    original = pool.process

    async def process(node: str, line: str, **options: Any) -> Any:
        lines.append(line)
        return await original(node, line, **options)

    pool.process = process  # type: ignore[method-assign]
    return lines


async def _sample_ps(pool: SshPool, nodes: list[str], seen: list[str], stop: asyncio.Event) -> None:
    while not stop.is_set():
        for node in nodes:
            result = await pool.run(node, ["ps", "-eww", "-o", "args"], timeout=10)
            seen.append(result.stdout)
        await asyncio.sleep(0.05)


async def _ask_without_the_key(pool: SshPool, inventory: Inventory) -> tuple[int, object]:
    """What the lane's engine answers a `/v1` request without the key (through the head's
    forward, as the cockpit reaches it)."""
    plan = plan_lane(inventory, inventory.recipe(LANE), inventory.cluster(CLUSTER))
    async with httpx.AsyncClient(timeout=30) as http:
        answer = await http.get(f"{await base_url(pool, plan)}/v1/models")
    return answer.status_code, answer.json()


def _leaks(text: str, values: dict[str, str]) -> list[str]:
    return [name for name, value in values.items() if value in text]


async def test_the_secrets_appear_in_no_output_no_file_and_no_command_line(
    secret_lane: tuple[SimFleet, dict[str, str]], tmp_path: Path
) -> None:
    fleet, values = secret_lane
    inv = fleet.inventory_dir
    outputs: dict[str, str] = {}
    for name, args in {
        "render": ["render", "--recipe", LANE, "--cluster", CLUSTER],
        "render-json": ["render", "--recipe", LANE, "--cluster", CLUSTER, "--format", "json"],
        "dry-run": ["launch", "--recipe", LANE, "--cluster", CLUSTER, "--dry-run"],
        "validate": ["validate"],
    }.items():
        result = run_cockpit("--inventory", inv, *args)
        assert result.returncode == 0, result.stderr
        outputs[name] = result.stdout + result.stderr
    assert "HF_TOKEN=<redacted>" in outputs["render"]
    assert "VLLM_API_KEY=<redacted>" in outputs["render"] and "--api-key" not in outputs["render"]
    revealed = run_cockpit("--inventory", inv, "render", "--recipe", LANE, "--reveal-secrets")
    assert set(_leaks(revealed.stdout, values)) == set(values)  # the search can find them

    inventory = load_inventory(inv)
    pool = pool_for(inventory)
    sent = record_lines(pool)
    watcher = pool_for(inventory)
    history = BootHistory(tmp_path / "state" / "boot-history.json")
    ctx = OpContext(inventory, pool, history)
    console = Console(file=io.StringIO(), width=200)
    printer = EventPrinter(console)
    events: list[OpEvent] = []
    ps: list[str] = []
    done = asyncio.Event()
    sampler = asyncio.create_task(_sample_ps(watcher, inventory.clusters[CLUSTER].nodes, ps, done))
    try:
        async for event in launch(ctx, inventory.recipe(LANE), CLUSTER, boot_timeout_s=120):
            events.append(event)
            printer.show(event)
        end = events[-1]
        assert isinstance(end, Finished) and end.ok, end.summary
        store = Store(inventory)
        store.apply_all(OpUpdate(1, e) for e in events)  # the TUI's run of the launch
        logs = {}
        for rank, node in enumerate(inventory.clusters[CLUSTER].nodes):
            container = f"cockpit-{LANE}-r{rank}"
            result = await pool.run(node, ["docker", "logs", container], timeout=30)
            logs[node] = result.stdout + result.stderr
            store.apply(RankLines(node, LANE, CLUSTER, rank, tuple(logs[node].splitlines())))
        bench = run_cockpit(
            "--inventory", inv, "bench", "--recipe", LANE, "--cluster", CLUSTER,
            "--label", "secrets", "--depths", "0", "--concurrency", "1", "--runs", "1",
            "--no-warmup", "--reports", tmp_path / "reports",
            env={"COCKPIT_STATE_DIR": str(tmp_path / "state")}, timeout=240,
        )  # fmt: skip
        assert bench.returncode == 0, bench.stdout + bench.stderr
        outputs["bench"] = bench.stdout + bench.stderr
        unauthorised = await _ask_without_the_key(pool, inventory)
    finally:
        done.set()
        await sampler
        await watcher.close()
        cleanup = [e async for e in stop(ctx, lane=LANE)]
        await pool.close()
    assert isinstance(cleanup[-1], Finished) and cleanup[-1].ok

    # the engine really got the key: without it, it refuses (readiness and the bench sent it)
    assert unauthorised == (401, {"error": "Unauthorized"})
    outputs["engine logs"] = "\n".join(logs.values())  # never echoed: not in its argv
    containers = json.loads((fleet.node_dir("dgx1") / "containers.json").read_text() or "[]")
    assert containers == []  # stopped; while it ran, `docker inspect` showed its Config.Env

    outputs["launch (CLI printer)"] = console.file.getvalue()  # type: ignore[attr-defined]
    outputs["events"] = "\n".join(repr(e) for e in events)
    snapshot = store.snapshot(0.0)
    outputs["TUI store log lines"] = "\n".join(
        entry.text for lines in snapshot.logs.values() for entry in lines
    )
    for report in sorted((tmp_path / "reports").glob("*")):
        if report.is_file():  # the pictures too: bytes, each as one character (latin-1)
            outputs[f"report {report.name}"] = report.read_bytes().decode("latin-1")
    assert {n.rsplit(".", 1)[-1] for n in outputs if n.startswith("report ")} >= {
        "json", "md", "svg", "png", "html"
    }  # fmt: skip
    outputs["boot history"] = history.path.read_text()
    stored = sorted((tmp_path / "state").glob("history.db*"))  # the bench's history store
    assert stored
    for db in stored:
        outputs[f"history {db.name}"] = db.read_bytes().decode("latin-1")
    for name, text in outputs.items():
        assert _leaks(text, values) == [], f"{name} shows {_leaks(text, values)}"

    # never on a command line: not in what the cockpit sent, not in the nodes' process lists
    assert any("docker run" in line and "--env-file" in line for line in sent)
    assert all(_leaks(line, values) == [] for line in sent)
    assert any("cockpit_sim.engine" in sample for sample in ps), "ps ran before the boot"
    assert all(_leaks(sample, values) == [] for sample in ps)
    for node in inventory.clusters[CLUSTER].nodes:  # the env files are gone
        env_dir = fleet.node_dir(node) / "home" / ".cockpit" / "env"
        assert env_dir.is_dir() and list(env_dir.iterdir()) == [], node
