"""The TUI's lane keys bound to the real operations (`cockpit.ops`, `cockpit.bench.run`).

Each operation's module is imported when its key is first used (about 0.1 s of modules, httpx
among them, that the first frame does not wait for).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

from cockpit.bench import artifacts
from cockpit.bench.likeness import WARM, Likeness
from cockpit.bench.models import Report, SweepPlan
from cockpit.errors import InputError
from cockpit.events import Finished, OpEvent, Planned
from cockpit.ops.context import OpContext
from cockpit.plan import LanePlan, plan_lane
from cockpit.tui.operations import LaneTarget
from cockpit.tui.state.runs import bench_mode, headline
from cockpit.tui.state.views import lane_key

if TYPE_CHECKING:
    from cockpit.config import Inventory
    from cockpit.ops.switch import Served


class FleetOperations:
    """Each method returns a fresh operation; its first event is the plan the TUI confirms.

    Each one first lets the pool try every node at once: the TUI's pool lives as long as the
    app, and a node that came back would otherwise fail fast while its reconnect backoff runs
    (a stop right after a node returned left that node's rank behind)."""

    def __init__(
        self,
        ctx: OpContext,
        reports_dir: Path,
        tokenizer_dir: Path | None = None,
    ) -> None:
        self.ctx = ctx
        self.reports_dir = reports_dir
        self.tokenizer_dir = tokenizer_dir  # None: each lane's own, read from its snapshot
        self.served_before: list[Served] = []

    def launch(self, target: LaneTarget) -> AsyncIterator[OpEvent]:
        return self._launch(target, sync_image=False)

    def sync_launch(self, target: LaneTarget) -> AsyncIterator[OpEvent]:
        """`launch --sync-image`: the image copied to the nodes that lack it, then the launch
        (the fix the TUI offers after a launch refused for a missing image)."""
        return self._launch(target, sync_image=True)

    def _launch(self, target: LaneTarget, *, sync_image: bool) -> AsyncIterator[OpEvent]:
        from cockpit.ops.launch import launch

        self.ctx.pool.retry_now()
        recipe = self.ctx.inventory.recipe(target.lane)
        return launch(self.ctx, recipe, target.cluster, sync_image=sync_image)

    def stop(self, target: LaneTarget) -> AsyncIterator[OpEvent]:
        from cockpit.ops.stop import stop

        self.ctx.pool.retry_now()
        return stop(self.ctx, lane=target.lane)

    def sync(self, target: LaneTarget) -> AsyncIterator[OpEvent]:
        from cockpit.ops.sync import sync_image

        self.ctx.pool.retry_now()
        return sync_image(self.ctx, self.ctx.inventory.recipe(target.lane), target.cluster)

    def sync_model(self, target: LaneTarget) -> AsyncIterator[OpEvent]:
        """`sync-model`, from the command palette (it has no key)."""
        from cockpit.ops.model_sync import sync_model

        self.ctx.pool.retry_now()
        return sync_model(self.ctx, self.ctx.inventory.recipe(target.lane), target.cluster)

    def switch(self, target: LaneTarget) -> AsyncIterator[OpEvent]:
        from cockpit.ops.switch import switch

        self.ctx.pool.retry_now()
        self.served_before.clear()  # filled by the switch's plan: what `restore` relaunches
        recipe = self.ctx.inventory.recipe(target.lane)
        return switch(self.ctx, recipe, target.cluster, previous=self.served_before)

    def restorable(self) -> LaneTarget | None:
        """The first lane the last switch replaced (None: nothing to restore)."""
        first = self.served_before[0] if self.served_before else None
        return LaneTarget(first.lane, first.cluster) if first else None

    def restore(self, target: LaneTarget) -> AsyncIterator[OpEvent]:
        """Launch again the lanes that served before the last switch (after it failed)."""
        from cockpit.ops.switch import restore

        self.ctx.pool.retry_now()
        return restore(self.ctx, list(self.served_before))

    def last_bench_plan(self, target: LaneTarget) -> SweepPlan | None:
        """The plan of the lane's newest report that recorded one; it reads every report in the
        reports folder: call it off the event loop."""
        return artifacts.last_plan(self.reports_dir, target.lane, target.cluster)

    async def bench(self, target: LaneTarget, sweep: SweepPlan) -> AsyncIterator[OpEvent]:
        """The sweep's points as the plan, then the bench operation's own events; refused before
        its plan when llama-benchy is asked for and not installed."""
        from cockpit.bench.environment import EngineUnanswered
        from cockpit.bench.events import SweepPlanned
        from cockpit.bench.run import BenchRequest, bench
        from cockpit.bench.sweep_plan import beyond_context
        from cockpit.ops.readiness import base_url

        if sweep.driver == "llama-benchy":
            from cockpit.bench.benchy import find_script

            try:
                await asyncio.to_thread(find_script)
            except InputError as exc:
                yield Finished.refused("bench", str(exc), lane=target.lane, cluster=target.cluster)
                return
        inventory = self.ctx.inventory
        plan = plan_lane(
            inventory, inventory.recipe(target.lane), inventory.cluster(target.cluster)
        )
        points = sweep.points
        mml = plan.recipe.serve.max_model_len
        skipped = set(beyond_context(points, mml))
        measured = len(points) - len(skipped)
        yield SweepPlanned(
            op="bench",
            lane=target.lane,
            cluster=target.cluster,
            steps=tuple(
                f"{p.label}  (skipped: beyond max-model-len {mml})" if p in skipped else p.label
                for p in points
            ),
            summary=f"{measured} points against {plan.endpoint}"
            + (f" ({len(skipped)} beyond the lane's context skipped)" if skipped else "")
            + f", {sweep.runs} run(s) each after a warm-up, "
            + ("COLD (context + prompt as one request)" if sweep.cold else "warm prefix")
            + f", {sweep.driver} driver, report in {self.reports_dir}",
            plan=sweep,
        )
        self.ctx.pool.retry_now()  # after the plan: it needs no node
        url = await base_url(self.ctx.pool, plan)
        tokenizer = self.tokenizer_dir
        if tokenizer is None:
            from cockpit.bench.tokenizer import lane_tokenizer

            cache = inventory.model_cache_of(plan.cluster, plan.ranks[0].node)  # the head's
            tokenizer = await lane_tokenizer(self.ctx.pool, plan, cache)
        request = BenchRequest(
            lane=target.lane,
            cluster=target.cluster,
            label="tui",
            endpoint=plan.endpoint,  # the lane's address in the report; `url` is the forward
            points=points,
            tokenizer_dir=tokenizer,
            reports_dir=self.reports_dir,
            runs=sweep.runs,
            driver=sweep.driver,
            recipe_hash=plan.recipe_hash,
            engine_image=plan.recipe.image.ref,
            max_model_len=mml,
            api_key=plan.api_key,
            head=plan.ranks[0].node,  # named, not the forward's port, when the engine is lost
        )
        try:
            async for event in bench(request, local_url=url):
                if not isinstance(event, Planned):  # the plan was shown already
                    yield event
        except EngineUnanswered as exc:  # a lane that is not running: said, not a traceback
            head = plan.ranks[0].node
            said = f"the engine of {target.lane} on {target.cluster} (head {head}) does not answer"
            yield Finished.failed(
                "bench", f"{said}: {exc}", lane=target.lane, cluster=target.cluster
            )


def bench_likeness(plan: LanePlan) -> Likeness:
    """What the TUI's bench measures on a lane (the built-in driver's warm sweep): its baseline
    must have measured the same, not a cold or llama-benchy run of the CLI."""
    return Likeness(
        plan.recipe.name,
        plan.cluster.name,
        plan.recipe_hash,
        plan.recipe.serve.served_model_name,
        WARM,
        "builtin",
    )


def report_headlines(reports_dir: Path) -> dict[str, str]:
    """Lane key → the "last bench" of its newest report (its last point with a decode rate):
    what the Lanes pane shows until this session benches the lane."""
    newest: dict[str, Report] = {}
    for report in artifacts.reports_in(reports_dir):  # oldest first: the newest stays
        if any(p.tg is not None for p in report.points):
            newest[lane_key(report.lane, report.cluster)] = report
    out = {}
    for key, report in newest.items():
        p = next(p for p in reversed(report.points) if p.tg is not None)
        assert p.tg is not None
        mode = bench_mode(p.spec.cold, report.environment.driver)
        out[key] = headline(p.tg, p.spec.depth, p.spec.concurrency, mode)
    return out


def report_baselines(
    reports_dir: Path, inventory: Inventory
) -> dict[str, dict[tuple[int, int], float]]:
    """Per lane, tg tokens/s by (depth, concurrency) from its newest report of what the TUI's
    bench measures (the Bench pane's baseline)."""
    out: dict[str, dict[tuple[int, int], float]] = {}
    for recipe in inventory.recipes.values():
        for cluster in inventory.clusters_of(recipe):  # the first with a report gives it
            plan = plan_lane(inventory, recipe, inventory.cluster(cluster))
            path = artifacts.baseline_for(reports_dir, bench_likeness(plan))
            if path is not None:
                report = artifacts.load_report(path)
                out[recipe.name] = {
                    (p.spec.depth, p.spec.concurrency): p.tg
                    for p in report.points
                    if p.tg is not None
                }
                break
    return out
