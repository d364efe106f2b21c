"""What the SSH port forward costs the bench: the built-in driver at c2, direct vs forwarded,
against the same engine, in one run.

A 2-node simulated fleet serves the Qwen lane (launched by the cockpit). The built-in driver
(the cockpit's own streaming client) measures pp2048/tg64 at c2 against the head's address
directly and through `SshPool.forward` (the path readiness, the TUI's feeds, probe and bench
take since the loopback shortcut is gone), alternating, `--rounds` times each. Printed per path:
tg and pp t/s (batch totals, engine time), TTFT, and the client process's CPU seconds (the
forward's encryption runs in the cockpit's process); then forwarded ÷ direct.

`--speeds`: the engine's time scale. At 1 the engine runs at the lane's own pace and the client
idles between chunks; at higher speeds every client cost is magnified that many times in the
figures (README, Benchmarking), which is where the forward's per-chunk cost would show.

    python benchmarks/forward_cost.py [--speeds 1,10] [--rounds 5] [--write-results]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.results_md import write_section  # noqa: E402
from cockpit.bench.driver import DriverConfig  # noqa: E402
from cockpit.bench.events import PointFinished  # noqa: E402
from cockpit.bench.models import PointSpec  # noqa: E402
from cockpit.bench.sweep import BuiltinDriver  # noqa: E402
from cockpit.config import load_inventory  # noqa: E402
from cockpit.events import Finished  # noqa: E402
from cockpit.ops.context import OpContext  # noqa: E402
from cockpit.ops.history import BootHistory  # noqa: E402
from cockpit.ops.launch import launch  # noqa: E402
from cockpit.ops.readiness import base_url  # noqa: E402
from cockpit.plan import plan_lane  # noqa: E402
from cockpit.ssh.inventory import pool_for  # noqa: E402
from cockpit_sim.engine.text import TOKENIZER_DIR  # noqa: E402
from cockpit_sim.fleet import SimFleet  # noqa: E402

RECIPE = "qwen3-0.6b-2x"
CLUSTER = "2nodes-dac"
POINT = PointSpec(depth=0, concurrency=2, pp=2048, tg=64)
RUNS = 3  # per point and round, after one unrecorded warm-up run
PATHS = ("direct", "forward")
NOTE = (
    "The forward leaves decode throughput (tg) where it was and adds a few milliseconds to each"
    " request's first token (pp, computed from the time to the first response, drops by as "
    "much): every byte crosses two more asyncssh hops in Python, one of them in the cockpit's "
    "own process, whose CPU time it raises. At engine speed X those client costs weigh X times "
    "more in the figures; on a real lane (speed 1) they are within a few per cent."
)


async def one_point(url: str, model: str, speed: float) -> dict[str, float]:
    """The driver's figures for POINT against `url`, and this process's CPU seconds."""
    cfg = DriverConfig(
        base_url=url, model=model, points=(POINT,), tokenizer_dir=TOKENIZER_DIR,
        runs=RUNS, time_scale=speed, hang_timeout_s=120.0,
    )  # fmt: skip
    cpu = time.process_time()
    results = [e.result async for e in BuiltinDriver(cfg).events() if isinstance(e, PointFinished)]
    cpu = time.process_time() - cpu
    (result,) = results
    assert result.inference is not None and result.inference.e2e_ttft_ms is not None, result
    return {
        "tg": result.tg or 0.0,
        "pp": result.pp or 0.0,
        "ttft_ms": result.inference.e2e_ttft_ms.mean,
        "cpu_s": cpu,
    }


async def measure(speed: float, rounds: int) -> dict[str, list[dict[str, float]]]:
    with tempfile.TemporaryDirectory(prefix="forward-cost-") as tmp:
        fleet = SimFleet(Path(tmp) / "fleet", 2, speed=speed, boot_speed=200.0)
        fleet.start()
        try:
            inventory = load_inventory(fleet.inventory_dir)
            recipe = inventory.recipe(RECIPE)
            async with pool_for(inventory) as pool:
                ctx = OpContext(inventory, pool, BootHistory(Path(tmp) / "boot.json"))
                events = [e async for e in launch(ctx, recipe, CLUSTER, boot_timeout_s=120)]
                assert isinstance(events[-1], Finished) and events[-1].ok, events[-1]
                plan = plan_lane(inventory, recipe, inventory.cluster(CLUSTER))
                urls = {"direct": plan.endpoint, "forward": await base_url(pool, plan)}
                model = recipe.serve.served_model_name
                out: dict[str, list[dict[str, float]]] = {p: [] for p in PATHS}
                for path in PATHS:  # unrecorded: imports, the tokenizer, the forward's listener
                    await one_point(urls[path], model, speed)
                for round_ in range(rounds):
                    order = PATHS if round_ % 2 == 0 else PATHS[::-1]
                    for path in order:
                        figures = await one_point(urls[path], model, speed)
                        out[path].append(figures)
                        print(f"speed {speed:g} round {round_ + 1} {path:7}: {figures}", flush=True)
        finally:
            fleet.stop()
    return out


def _median(rows: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def table(results: dict[float, dict[str, list[dict[str, float]]]], rounds: int) -> str:
    lines = [
        f"`python benchmarks/forward_cost.py --speeds {','.join(f'{s:g}' for s in results)} "
        f"--rounds {rounds}` ({date.today().isoformat()})",
        "",
        f"Built-in driver, {POINT.label}, {RUNS} runs per point after a warm-up, one unrecorded "
        f"round per path, then {rounds} rounds per path alternating, against the same engine "
        "of the simulated Qwen lane: the head's "
        "address directly vs an SSH port forward from the head (asyncssh in the cockpit's "
        "process, the fleet's asyncssh server on the node). Medians over the rounds; t/s and "
        "TTFT in engine time.",
        "",
        "| engine speed | path | tg t/s | pp t/s | TTFT ms | client CPU s |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for speed, paths in results.items():
        for path in PATHS:
            rows = paths[path]
            lines.append(
                f"| {speed:g} | {path} | {_median(rows, 'tg'):.1f} | {_median(rows, 'pp'):.0f} | "
                f"{_median(rows, 'ttft_ms'):.0f} | {_median(rows, 'cpu_s'):.2f} |"
            )
        ratio = {k: _median(paths["forward"], k) / _median(paths["direct"], k) for k in
                 ("tg", "pp", "ttft_ms", "cpu_s")}  # fmt: skip
        lines.append(
            f"| {speed:g} | **forward ÷ direct** | **{ratio['tg']:.3f}** | "
            f"**{ratio['pp']:.3f}** | **{ratio['ttft_ms']:.3f}** | **{ratio['cpu_s']:.2f}** |"
        )
    return "\n".join([*lines, "", NOTE])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speeds", default="1,10")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    speeds = [float(s) for s in args.speeds.split(",")]
    results = {speed: asyncio.run(measure(speed, args.rounds)) for speed in speeds}
    text = table(results, args.rounds)
    print()
    print(text)
    if args.write_results:
        write_section("forward_cost", f"## The SSH forward's cost to the bench\n\n{text}")


if __name__ == "__main__":
    main()
