"""Issue 31, API keys, on the real vLLM lane (started with a key in its recipe's [env], see
tests/real_vllm.py): the cockpit found it ready and benches it, a request without the key gets
vLLM's 401, the key is on no command line of the node; and the simulated engine answers the same
requests exactly as the real one does (the contract)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from cockpit.bench.artifacts import load_report
from cockpit.bench.models import FlagKind
from cockpit.config import load_inventory
from cockpit.ops.readiness import base_url
from cockpit.plan import plan_lane
from cockpit.ssh.inventory import pool_for
from cockpit_sim.fleet.realvllm import CLUSTER, RECIPE
from tests.real_vllm import RealLane, cockpit
from tests.sim_engine.engine_proc import SMALL, EngineProc, start

pytestmark = [pytest.mark.slow, pytest.mark.realvllm, pytest.mark.timeout(1800)]
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
    inventory = load_inventory(lane.inventory)
    async with pool_for(inventory) as pool:
        done = await pool.run("dgx1", ["ps", "-eo", "args"], timeout=30)
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
