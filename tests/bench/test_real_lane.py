"""The real vLLM lane (vLLM's CPU build, a tiny random Llama), launched, watched, benched and
stopped by the cockpit over SSH like any lane. Slow: the lane boots once per session."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from cockpit.bench.artifacts import load_report
from cockpit.bench.method import BOUND_MARGIN, fastest_decode
from cockpit.bench.models import FlagKind, Report
from cockpit.bench.watch import scan_counters
from cockpit.config import load_inventory
from cockpit.ops.readiness import base_url
from cockpit.plan import plan_lane
from cockpit.ssh.inventory import pool_for
from cockpit.telemetry.boot import BootPhase, BootState, advance
from cockpit.telemetry.histogram import Histogram
from cockpit.tui.feeds.fleet import FleetFeed
from cockpit.tui.state import Store
from cockpit.tui.state.views import EngineView
from cockpit_sim.fleet.realvllm import CLUSTER, RECIPE
from tests.real_vllm import RealLane, cockpit
from tests.sim_engine.engine_proc import SMALL, EngineProc, start

pytestmark = [pytest.mark.slow, pytest.mark.realvllm, pytest.mark.timeout(1800)]
CONTAINER = f"cockpit-{RECIPE}-r0"


async def _container_log(lane: RealLane) -> list[str]:
    inventory = load_inventory(lane.inventory)
    async with pool_for(inventory) as pool:
        done = await pool.run("dgx1", f"docker logs {CONTAINER} 2>&1", timeout=30)
    return done.stdout.splitlines()


async def test_the_boot_tracker_reads_the_real_log_and_names_the_compile_warm_up(
    real_lane: RealLane,
) -> None:
    assert "ready" in real_lane.launch_output.lower(), real_lane.launch_output
    phases: list[BootPhase] = []
    state = BootState()
    for line in await _container_log(real_lane):
        state = advance(state, line)
        if not phases or phases[-1] is not state.phase:
            phases.append(state.phase)
    assert phases[-1] is BootPhase.READY, phases
    assert BootPhase.COMPILING in phases, phases
    # the minute of torch.compile warm-up is its own phase, before the KV pool is made
    assert phases.index(BootPhase.COMPILING) < phases.index(BootPhase.READY)
    assert state.kv_pool_tokens == 2_097_152 and state.hang_hint is None


async def _tpot(lane: RealLane) -> Histogram:
    """The engine's own time per output token so far, through the lane's forward (`/metrics`)."""
    inventory = load_inventory(lane.inventory)
    plan = plan_lane(inventory, inventory.recipe(RECIPE), inventory.cluster(CLUSTER))
    async with pool_for(inventory) as pool, httpx.AsyncClient(timeout=60) as http:
        text = (await http.get(f"{await base_url(pool, plan)}/metrics")).text
    found = scan_counters(text, 0.0).tpot
    assert found is not None, text[:500]
    return found


def test_the_first_bench_after_the_boot_holds_every_run_to_the_engines_own_rate(
    real_lane: RealLane, tmp_path: Path
) -> None:
    """The first bench of the session, right after the launch (issue 31): run 1 once read 177.6
    t/s and run 2 74.8 while the engine's own inter-token time was ~14 ms, and the point said
    126.2 t/s, "done". Every run the point keeps is within 1.5x of the engine's own fastest
    per-stream rate over the bench; a run that was not, or whose decode the client could not
    observe, is dropped and says so."""
    before = asyncio.run(_tpot(real_lane))
    done = cockpit(
        real_lane.inventory,
        "bench", "--recipe", RECIPE, "--cluster", CLUSTER, "--label", "first", "--depths", "0",
        "--concurrency", "1", "--pp", "512", "--tg", "128", "--runs", "3",
        "--reports", str(tmp_path),
        timeout=900,
    )  # fmt: skip
    engine = fastest_decode(asyncio.run(_tpot(real_lane)).since(before))
    assert done.returncode == 0, done.stdout + done.stderr
    [point] = load_report(next(tmp_path.glob("*_first.json"))).points
    assert engine is not None and point.inference is not None, point.flags
    # a cold first run: read faster than the engine, or its backlog in one read (seen: 116 of
    # its 128 tokens): dropped, and the point says which
    said = point.has(FlagKind.IMPLAUSIBLE) or point.has(FlagKind.UNOBSERVABLE)
    assert bool(point.inference.dropped) == said, point.flags
    if point.inference.tg is None:  # every run dropped (a client starved on a crowded machine
        # reads whole streams at once): no rate at all, never the too-fast one
        assert point.inference.dropped == 3 and point.inference.tg_req is None, point.flags
        return
    for value in point.inference.tg.values:
        assert value <= BOUND_MARGIN * engine, (point.inference.tg, engine, point.flags)


def _bench(lane: RealLane, driver: str, reports: Path) -> Report:
    done = cockpit(
        lane.inventory,
        "bench", "--recipe", RECIPE, "--cluster", CLUSTER, "--label", driver,
        "--depths", "0,1K", "--concurrency", "1,2", "--pp", "512", "--tg", "32",
        "--runs", "3", "--driver", driver, "--reports", str(reports),
        timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    [path] = reports.glob(f"*_{driver}.json")
    return load_report(path)


def test_both_drivers_bench_it_through_the_ssh_forward(real_lane: RealLane, tmp_path: Path) -> None:
    ours = _bench(real_lane, "builtin", tmp_path / "builtin")
    theirs = _bench(real_lane, "llama-benchy", tmp_path / "benchy")
    for report in (ours, theirs):
        env = report.environment
        # the lane's own tokenizer, read from its snapshot on the node; the lane's endpoint
        # (reached through a forward: the report names the lane's address, not the forward)
        assert "lane snapshot" in env.tokenizer and "cockpit/tiny-llama" in env.tokenizer
        assert env.endpoint.endswith(":30000") and env.time_scale == 1.0
        assert "adapt-prompt" in env.prompt_mode and not report.partial
        assert len(report.points) == 4 and not any(p.skipped for p in report.points)
        for point in report.points:
            kinds = {f.kind for f in point.flags}
            # adapt-prompt with the lane's tokenizer: the engine counts what was intended
            assert FlagKind.TOKEN_MISMATCH not in kinds
            assert point.inference is not None
            # a client starved of CPU reads a whole 32-token stream in one socket read (seen while
            # a test had lowered pytest's autogroup behind the fleet's sessions): such runs are
            # dropped or leave no decode window, and the point says so instead of a figure
            if point.inference.tg is None:
                assert kinds & {FlagKind.IMPLAUSIBLE, FlagKind.UNOBSERVABLE}, point.flags
    for a, b in zip(ours.points, theirs.points, strict=True):
        # the same points, their figures in the same range: the engine's own speed moves by tens
        # of per cent with the clients' CPU on 2 shared cores (llama-benchy's costs more);
        # benchmarks/real_lane_agreement.py holds each driver to the engine's own ITL
        assert a.spec == b.spec
        if a.tg is not None and b.tg is not None:
            assert 1 / 3 < a.tg / b.tg < 3, (a.spec, a.tg, b.tg)
    usage = {p.spec.depth: p.usage_prompt_tokens for p in ours.points if p.spec.concurrency == 1}
    assert abs((usage[0] or 0) - 512) <= 8 and abs((usage[1024] or 0) - (1024 + 512)) <= 8, usage


async def _engine_view(lane: RealLane) -> EngineView:
    """The lane's engine as the TUI's KV and Engine panes get it: its own feed and store."""
    inventory = load_inventory(lane.inventory)
    store = Store(inventory)
    async with pool_for(inventory) as pool, asyncio.timeout(60):
        async for batch in FleetFeed(inventory, pool, scrape_s=0.5).batches():
            store.apply_all(batch)
            view = store.snapshot(time.time()).engines.get(f"{RECIPE}@{CLUSTER}")
            if view is not None and view.gen_tps is not None:  # two scrapes: rates too
                return view
    raise AssertionError("unreachable")


async def test_the_kv_pane_shows_the_real_pool_in_gib(real_lane: RealLane) -> None:
    """vLLM reports `kv_cache_memory_bytes="None"` unless that flag is set: the pane's GiB is
    blocks × block size × the recipe's KV bytes per token, and equals the KV space the lane's env
    gives the CPU build (VLLM_CPU_KVCACHE_SPACE=1), as its boot log's pool in tokens does."""
    view = await _engine_view(real_lane)
    assert view.pool_tokens == 2_097_152
    assert view.pool_gib == pytest.approx(1.0)
    assert view.running == 0 and view.waiting == 0 and view.kv_usage == 0.0


# API keys: the lane was started with a key in its recipe's [env] (tests/real_vllm.py). The
# cockpit found it ready and benches it, a request without the key gets vLLM's 401, the key is on
# no command line of the node, and the simulated engine answers the same requests as the real one.
# In this file, not one of its own: each file of a parallel run may get its own worker, and each
# worker would boot a lane of its own.

SERVED = "tiny-llama"  # the real lane's served name; the simulated engine is given the same


@dataclass(frozen=True)
class Ask:
    """One request of the contract: the credentials it carries (None: no Authorization)."""

    method: str
    path: str
    auth: str | None = None
    body: dict | None = None

    def header(self, key: str) -> dict[str, str]:
        return {} if self.auth is None else {"Authorization": self.auth.format(key=key)}


CHAT = {"model": SERVED, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
CONTRACT = [
    Ask("GET", "/health"),
    Ask("GET", "/metrics"),
    Ask("GET", "/version"),
    Ask("POST", "/tokenize", body={"model": SERVED, "prompt": "hello"}),
    Ask("GET", "/v1/models"),
    Ask("GET", "/v1/models", "Bearer wrong-{key}"),
    Ask("GET", "/v1/models", "Basic {key}"),
    Ask("GET", "/v1/models", "{key}"),
    Ask("GET", "/v1/models", "bearer {key}"),
    Ask("GET", "/v1/models", "Bearer {key}"),
    Ask("POST", "/v1/chat/completions", body=CHAT),
    Ask("POST", "/v1/chat/completions", "Bearer {key}", body=CHAT),
    Ask("GET", "/v1/nope"),
    Ask("GET", "/v1/nope", "Bearer {key}"),
    Ask("GET", "/v2/models"),
    Ask("POST", "/inference/v1/generate", body={}),
    Ask("OPTIONS", "/v1/models"),
]


def _answers(url: str, key: str) -> list[tuple[int, object]]:
    """(status, body where it is an error) of every request of the contract."""
    out: list[tuple[int, object]] = []
    with httpx.Client(timeout=60) as http:
        for ask in CONTRACT:
            answer = http.request(
                ask.method, url + ask.path, headers=ask.header(key), json=ask.body
            )
            error = answer.status_code in (401, 404, 405)
            out.append((answer.status_code, answer.json() if error else None))
    return out


def _sim(tmp: Path, key: str) -> EngineProc:
    proc = start(
        tmp / "dgx1", SMALL, "--served-model-name", SERVED, "--max-model-len", "4096",
        speed=50, boot_speed=2000, env={"VLLM_API_KEY": key},
    )  # fmt: skip
    assert proc.wait_for("Application startup complete.", 60), proc.text()[-2000:]
    return proc


def test_the_simulated_engine_answers_the_key_contract_as_the_real_one(
    real_lane: RealLane, tmp_path: Path
) -> None:
    real = asyncio.run(_real_answers(real_lane))
    engine = _sim(tmp_path, real_lane.api_key)
    try:
        simulated = _answers(engine.url, real_lane.api_key)
    finally:
        engine.stop()
    rows = [
        f"{a.method} {a.path} {a.auth}: real {r} sim {s}"
        for a, r, s in zip(CONTRACT, real, simulated, strict=True)
        if r != s
    ]
    assert not rows, "\n".join(rows)
    answers = _by_request(real)
    assert answers[("GET", "/v1/models", None)][0] == 401  # the contract is not vacuous
    assert answers[("GET", "/v1/models", "Bearer {key}")][0] == 200


def _by_request(answers: list[tuple[int, object]]) -> dict[tuple[str, str, str | None], tuple]:
    return {(a.method, a.path, a.auth): r for a, r in zip(CONTRACT, answers, strict=True)}


async def _real_answers(lane: RealLane) -> list[tuple[int, object]]:
    inventory = load_inventory(lane.inventory)
    plan = plan_lane(inventory, inventory.recipe(RECIPE), inventory.cluster(CLUSTER))
    async with pool_for(inventory) as pool:
        url = await base_url(pool, plan)
        return await asyncio.to_thread(_answers, url, lane.api_key)


async def _node_processes(lane: RealLane) -> str:
    """Every process's whole command line (-ww: with COLUMNS set, ps cuts each line there)."""
    inventory = load_inventory(lane.inventory)
    async with pool_for(inventory) as pool:
        done = await pool.run("dgx1", ["ps", "-eww", "-o", "args"], timeout=30)
    return done.stdout


def test_the_real_lane_with_a_key_is_ready_benched_and_refuses_a_request_without_it(
    real_lane: RealLane, tmp_path: Path
) -> None:
    key = real_lane.api_key
    # ready: the launch's readiness probe sent the key (vLLM answered its chat completion)
    assert "ready" in real_lane.launch_output.lower(), real_lane.launch_output
    assert key not in real_lane.launch_output
    answers = _by_request(asyncio.run(_real_answers(real_lane)))
    assert answers[("GET", "/v1/models", None)] == (401, {"error": "Unauthorized"})
    assert answers[("POST", "/v1/chat/completions", None)] == (401, {"error": "Unauthorized"})
    assert answers[("GET", "/v1/models", "Bearer {key}")][0] == 200
    processes = asyncio.run(_node_processes(real_lane))
    assert "vllm serve" in processes and key not in processes  # not in any argv on the node
    done = cockpit(
        real_lane.inventory,
        "bench", "--recipe", RECIPE, "--cluster", CLUSTER, "--label", "keyed",
        "--depths", "0", "--concurrency", "1", "--pp", "256", "--tg", "64", "--runs", "2",
        "--reports", str(tmp_path),
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert key not in done.stdout + done.stderr
    [path] = tmp_path.glob("*_keyed.json")
    [point] = load_report(path).points
    # answered (a 401 would be the point's errors); whether its decode could be observed over
    # the forward on a busy machine is the judge's business (tests/bench/test_real_lane.py)
    assert not point.skipped and not point.has(FlagKind.ERRORS), point.flags
    assert point.inference is not None and point.inference.errors == 0
    assert point.inference.tg is not None or point.has(FlagKind.UNOBSERVABLE), point.flags
    assert key not in path.read_text()


def test_stop_removes_it(real_lane: RealLane) -> None:
    """Last in this file: the session's teardown tolerates a lane already stopped."""
    done = cockpit(real_lane.inventory, "stop", "--lane", RECIPE, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    status = cockpit(real_lane.inventory, "status", "--format", "json", timeout=60)
    assert CONTAINER not in status.stdout and json.loads(status.stdout)
