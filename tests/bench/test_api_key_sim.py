"""Issue 31, API keys: a lane whose engine requires a key (the simulated engine enforces it as
vLLM does) answers readiness, the probe, both bench drivers and the demo's load, because each
sends `Authorization: Bearer`; and no client the cockpit starts holds the key on its command line.
"""

from __future__ import annotations

import asyncio
import secrets
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cockpit.bench import artifacts, probe
from cockpit.bench.events import SweepFinished
from cockpit.bench.load import LoadCount, LoadShape, steady_load
from cockpit.bench.models import FlagKind, PointSpec
from cockpit.bench.remote import remote_argv, remote_events
from cockpit.bench.run import BenchRequest, bench
from cockpit.config import load_inventory
from cockpit.events import OpEvent
from cockpit.ops import readiness
from cockpit.ssh.inventory import pool_for
from cockpit_sim.engine.text import TOKENIZER_DIR
from cockpit_sim.fleet import SimFleet
from tests.bench.sim_engine import SMALL, running_engine
from tests.cli_runner import run_cockpit

KEY = "sk-" + secrets.token_hex(20)  # fresh per run: parallel runs share the process list
SPEED = 20.0
UNAUTHORIZED = {"error": "Unauthorized"}


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A serving engine started with VLLM_API_KEY in its environment, as the env file sets it."""
    with running_engine(
        tmp_path_factory.mktemp("keyed"),
        model=SMALL,
        tp=1,
        speed=SPEED,
        env={"VLLM_API_KEY": KEY},
    ) as url:
        yield url


def test_the_engine_refuses_v1_without_the_key_and_keeps_health_open(keyed: str) -> None:
    without = httpx.get(f"{keyed}/v1/models", timeout=10)
    assert (without.status_code, without.json()) == (401, UNAUTHORIZED)
    assert httpx.get(f"{keyed}/health", timeout=10).status_code == 200
    bearer = {"Authorization": f"Bearer {KEY}"}
    assert httpx.get(f"{keyed}/v1/models", headers=bearer, timeout=10).status_code == 200


async def test_readiness_probe_and_the_demo_load_send_the_key(keyed: str) -> None:
    model = SMALL  # the served name: the model path when none is given
    refused = await readiness.probe(keyed, model)
    assert refused is not None and "401" in refused and "Unauthorized" in refused
    assert await readiness.probe(keyed, model, KEY) is None

    result = await probe.probe(keyed, model, scale=SPEED, max_tokens=16, api_key=KEY)
    assert result.health_tokens == 8 and (result.wire.status, result.wire.tokens) == (200, 16)

    count = LoadCount()
    shape = LoadShape(streams=1, max_tokens=8, pause_s=(0.05, 0.1), timeout_s=30)
    load = asyncio.create_task(steady_load(keyed, count, shape, KEY))
    try:
        async with asyncio.timeout(60):
            while count.ok < 2 and not count.failed:
                await asyncio.sleep(0.1)
    finally:
        load.cancel()
        await asyncio.gather(load, return_exceptions=True)
    assert count.ok >= 2 and count.failed == 0, count


@pytest.mark.parametrize(
    "driver, exe",
    [("builtin", ()), ("llama-benchy", (sys.executable, "-m", "llama_benchy"))],
)
async def test_both_drivers_bench_it_and_llama_benchy_never_sees_the_key_in_its_argv(
    keyed: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, driver: str, exe: tuple[str, ...]
) -> None:
    started: list[tuple[str, ...]] = []
    spawn = asyncio.create_subprocess_exec

    async def recording(*argv: str, **kw: Any) -> asyncio.subprocess.Process:
        started.append(argv)
        return await spawn(*argv, **kw)

    monkeypatch.setattr(asyncio, "create_subprocess_exec", recording)
    req = BenchRequest(
        lane="small",
        cluster="sim",
        label=driver,
        endpoint=keyed,
        points=(PointSpec(0, 1, 256, 16),),
        tokenizer_dir=TOKENIZER_DIR,
        reports_dir=tmp_path,
        runs=1,
        warmup=False,
        driver=driver,
        benchy_exe=exe,
        time_scale=SPEED,
        api_key=KEY,
    )
    assert KEY not in repr(req)
    events = [e async for e in bench(req)]
    last = events[-1]
    assert isinstance(last, SweepFinished) and last.ok, last
    [point] = [e.result for e in events if type(e).__name__ == "PointFinished"]
    assert point.inference is not None and not point.has(FlagKind.ERRORS), point.flags
    if driver == "llama-benchy":
        assert started and all(KEY not in " ".join(argv) for argv in started), started


def test_an_endpoint_bench_takes_the_operator_s_vllm_api_key(keyed: str, tmp_path: Path) -> None:
    args = ("bench", "--endpoint", keyed, "--tokenizer", TOKENIZER_DIR, "--label", "keyed",
            "--depths", "0", "--concurrency", "1", "--pp", "256", "--tg", "16", "--runs", "1",
            "--no-warmup", "--time-scale", str(SPEED), "--reports", tmp_path)  # fmt: skip
    state = {"COCKPIT_STATE_DIR": str(tmp_path / "state")}
    done = run_cockpit(*args, env={**state, "VLLM_API_KEY": KEY}, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    assert KEY not in done.stdout + done.stderr
    refused = run_cockpit(*args, env={**state, "VLLM_API_KEY": ""}, timeout=180)
    assert refused.returncode != 0 and "401" in refused.stdout + refused.stderr


async def test_a_bench_host_gets_the_key_on_its_stdin_not_its_command_line(
    keyed: str, small_fleet: SimFleet, tmp_path: Path
) -> None:
    inventory = load_inventory(small_fleet.inventory_dir)
    node = small_fleet.names[0]
    req = BenchRequest(
        lane="small", cluster="sim", label="remote", endpoint=keyed,
        points=(PointSpec(0, 1, 256, 16),), tokenizer_dir=TOKENIZER_DIR, reports_dir=tmp_path,
        runs=1, warmup=False, time_scale=SPEED, client_host=node, api_key=KEY,
    )  # fmt: skip
    sent: list[list[str]] = []
    async with pool_for(inventory) as pool:

        def source(model: str, scale: float) -> AsyncIterator[OpEvent]:
            argv = remote_argv(
                [sys.executable, "-m", "cockpit"], keyed, model, scale, req.points, 1, False,
                "builtin", 60.0, req.lane, req.cluster, str(TOKENIZER_DIR), True, True,
            )  # fmt: skip
            sent.append(argv)
            return remote_events(pool, node, argv, KEY)

        events = [e async for e in bench(req, source=source)]
    last = events[-1]
    assert isinstance(last, SweepFinished) and last.ok, last
    [point] = artifacts.load_report(Path(last.report_json)).points
    assert point.inference is not None and not point.has(FlagKind.ERRORS), point.flags
    assert sent and "--api-key-stdin" in sent[0] and KEY not in " ".join(sent[0])
