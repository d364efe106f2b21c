"""`bench`, `probe`: measuring a lane, honestly (`report_cmds` reads the results).

`bench` prints a live table that fills in as points finish, every flag with its fix, where the
report went and its depth curve. The exit code is 0 when every point was measured, 1 when some
point was skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import socket
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

import click
import httpx
from rich.console import Group
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from cockpit.api_key import auth_headers, endpoint_api_key, read_key_line
from cockpit.bench import artifacts
from cockpit.bench import events as bev
from cockpit.bench import probe as bench_probe
from cockpit.bench.environment import EngineUnanswered, served_models, unanswered
from cockpit.bench.events import event_line
from cockpit.bench.models import PointResult, PointSpec, SweepPlan
from cockpit.bench.prompts import tokenizer_problem
from cockpit.bench.remote import remote_argv, remote_events
from cockpit.bench.run import BenchRequest, bench, make_driver, time_scale_default
from cockpit.bench.sweep_plan import DRIVERS, field_value, written
from cockpit.bench.tokenizer import lane_tokenizer, snapshot_dir
from cockpit.cli.bounds import COUNT, POSITIVE, SECONDS
from cockpit.cli.output import stdout_console
from cockpit.cli.recording import cli_recorder
from cockpit.cli.report_cmds import depth_charts
from cockpit.cli.usable import usable_inventory
from cockpit.config import Inventory
from cockpit.errors import EXIT_FAILED, InputError
from cockpit.events import OpEvent
from cockpit.history.recorder import recording
from cockpit.history.records import ReportWritten
from cockpit.ops import readiness
from cockpit.ops.inflight import InFlight
from cockpit.ops.interrupt import run_interruptible
from cockpit.plan import LanePlan, plan_lane
from cockpit.ssh import SshPool
from cockpit.ssh.inventory import pool_for

console = stdout_console()


DEFAULTS = written(SweepPlan())


def _plan_field(ctx: click.Context, param: click.Parameter, value: str) -> int | tuple[int, ...]:
    """An option of the sweep plan, read by the rule the TUI's plan editor applies too."""
    try:
        return field_value(str(param.name), value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _is_base_url(value: str) -> bool:
    """http(s), a host, a port (if any) from 1 to 65535, no blank or control character."""
    if any(c.isspace() or not c.isprintable() for c in value):
        return False
    try:
        parts = urlsplit(value)
        port = parts.port  # a ValueError when not a number from 0 to 65535
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname) and port != 0


def _endpoint(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """An http(s) base URL, refused otherwise before any request is made (httpx answered
    `file:///etc/passwd` or `127.0.0.1:30000` with a traceback)."""
    if value is None:
        return None
    if not _is_base_url(value):
        raise click.BadParameter(
            f"{value!r} is not an http(s) base URL such as http://127.0.0.1:8000"
        )
    return value.rstrip("/")


def _unanswered(where: str, exc: EngineUnanswered | httpx.HTTPError) -> EngineUnanswered:
    """The engine that did not answer, named by its lane or endpoint (not by a local forward's
    port), in one line."""
    reason = unanswered(exc) if isinstance(exc, httpx.HTTPError) else str(exc)
    return EngineUnanswered(f"{where} does not answer: {reason}")


def _engine_of(plan: LanePlan | None, endpoint: str | None) -> str:
    if plan is None:
        return f"the engine at {endpoint}"
    head = plan.ranks[0].node
    return (
        f"the engine of {plan.recipe.name} on {plan.cluster.name} (head {head}; is the lane "
        "running? cockpit status)"
    )


def _lane_plan(
    ctx: click.Context, recipe: str | None, cluster: str | None
) -> tuple[Inventory, LanePlan]:
    """The inventory and the plan of `--recipe R --cluster C`, the alternative to `--endpoint`."""
    if not recipe or not cluster:
        raise InputError("give --recipe and --cluster (or --endpoint URL)")
    inventory = usable_inventory((ctx.obj or {}).get("inventory"), cluster)
    return inventory, plan_lane(inventory, inventory.recipe(recipe), inventory.cluster(cluster))


class LiveTable:
    """The bench's live view: one row per point, filled in as it runs and finishes."""

    def __init__(self, points: tuple[PointSpec, ...]) -> None:
        self.points = points
        self.state: dict[PointSpec, str] = {p: "pending" for p in points}
        self.results: dict[PointSpec, PointResult] = {}
        self.notes: list[str] = []

    def update(self, event: OpEvent) -> None:
        match event:
            case bev.PointStarted(point=point):
                self.state[point] = "running"
            case bev.RequestProgress(point=point, run=run, phase=phase, tokens=tokens):
                self.state[point] = f"run {run} {phase} {tokens} tok"
            case bev.PointFinished(result=result):
                self.results[result.spec] = result
                self.state[result.spec] = "skipped" if result.skipped else "done"
            case bev.BenchWarning(message=message):
                self.notes.append(message)

    def render(self) -> Group:
        table = Table(box=None, header_style="bold", pad_edge=False, padding=(0, 1))
        for name in ("point", "c", "pp t/s", "tg t/s", "tg/req", "TTFT client ms", "status"):
            table.add_column(name, justify="left" if name in ("point", "status") else "right")
        for p in self.points:
            r = self.results.get(p)
            inf = r.inference if r else None
            status = self.state[p]
            if r and r.flags:
                status = "[red]FLAGGED[/red] " + ",".join(f.kind for f in r.flags)
            table.add_row(
                escape(f"d{p.depth}" + (" cold" if p.cold else "")),
                f"c{p.concurrency}",
                _mean(inf.pp if inf else None, 0),
                _mean(inf.tg if inf else None),
                _mean(inf.tg_req if inf else None),
                _mean(inf.e2e_ttft_ms if inf else None, 0),
                status,
            )
        return Group(table, *(f"[yellow]![/yellow] {escape(n)}" for n in self.notes[-6:]))


def _mean(stat: object, digits: int = 1) -> str:
    mean = getattr(stat, "mean", None)
    return f"{mean:,.{digits}f}" if mean is not None else ""


async def _consume(events: AsyncIterator[OpEvent], show: Callable[[OpEvent], None]) -> OpEvent:
    last: OpEvent | None = None
    async for event in events:
        show(event)
        last = event
    assert last is not None
    return last


def _print_events_jsonl(req: BenchRequest, model: str, scale: float) -> None:
    """The remote side of `--bench-host`: the driver's events, one JSON line each."""

    async def run() -> None:
        async for event in make_driver(req, model, scale).events():
            sys.stdout.write(event_line(event) + "\n")
            sys.stdout.flush()

    asyncio.run(run())


@click.command(name="bench")
@click.option("--recipe", help="Lane recipe (with --cluster); or give --endpoint.")
@click.option("--cluster")
@click.option(
    "--endpoint", callback=_endpoint, help="An OpenAI-compatible base URL instead of a lane."
)
@click.option("--lane", "lane_name", help="Lane name for the report (with --endpoint).")
@click.option("--label", required=True, help="Report label, e.g. sparkring-honest-baseline.")
@click.option(
    "--depths",
    default=DEFAULTS["depths"],
    show_default=True,
    callback=_plan_field,
    metavar="LIST",
    help="Context depths, a comma list (4096 or 4K).",
)
@click.option(
    "--concurrency",
    default=DEFAULTS["concurrency"],
    show_default=True,
    callback=_plan_field,
    metavar="LIST",
    help="Streams at once, a comma list.",
)
@click.option(
    "--pp",
    default=DEFAULTS["pp"],
    show_default=True,
    callback=_plan_field,
    metavar="N",
    help="Prompt tokens of each request.",
)
@click.option(
    "--tg",
    default=DEFAULTS["tg"],
    show_default=True,
    callback=_plan_field,
    metavar="N",
    help="Response tokens of each request.",
)
@click.option(
    "--runs",
    default=DEFAULTS["runs"],
    show_default=True,
    callback=_plan_field,
    metavar="N",
    help="Measured runs per point (several give the spread and the noisy flag).",
)
@click.option("--cold", is_flag=True, help="Context + prompt as one cold request (old numbers).")
@click.option("--no-warmup", is_flag=True, help="Skip the unrecorded warm-up run of each point.")
@click.option("--driver", type=click.Choice(DRIVERS), default=SweepPlan.driver)
@click.option("--quality", is_flag=True, help="Also run tool-eval-bench for the quality score.")
@click.option("--bench-host", default="local", show_default=True, help="NODE or local.")
@click.option(
    "--tokenizer",
    type=click.Path(path_type=Path),
    default=None,
    help="The served model's tokenizer folder (default: the lane's, read from its snapshot).",
)
@click.option(
    "--adapt-prompt/--no-adapt-prompt",
    default=True,
    show_default=True,
    help="Trim context and prompt by the chat template's tokens (llama-benchy's default).",
)
@click.option("--reports", type=click.Path(path_type=Path), default=Path("reports"))
@click.option(
    "--hang-timeout", type=SECONDS, default=300.0, show_default=True, help="Seconds of silence."
)
@click.option("--model", default=None, help="Served model name (default: asked).")
@click.option(
    "--time-scale",
    type=POSITIVE,
    default=None,
    help="Engine seconds per wall second (a sped-up simulator; default $COCKPIT_TIME_SCALE or 1).",
)
@click.option("--events-jsonl", is_flag=True, hidden=True)
@click.option(
    "--api-key-stdin", is_flag=True, hidden=True, help="The lane's API key: stdin's first line."
)
@click.option("--remote-cockpit", default="cockpit", hidden=True, help="Command on the host.")
@click.pass_context
def bench_cmd(
    ctx: click.Context,
    recipe: str | None,
    cluster: str | None,
    endpoint: str | None,
    lane_name: str | None,
    label: str,
    depths: tuple[int, ...],
    concurrency: tuple[int, ...],
    pp: int,
    tg: int,
    runs: int,
    cold: bool,
    no_warmup: bool,
    driver: str,
    quality: bool,
    bench_host: str,
    tokenizer: Path | None,
    adapt_prompt: bool,
    reports: Path,
    hang_timeout: float,
    model: str | None,
    time_scale: float | None,
    events_jsonl: bool,
    api_key_stdin: bool,
    remote_cockpit: str,
) -> None:
    """Quality + perf + depth sweep at c1/c2, live, with honesty checks and a report."""
    if tokenizer is not None and bench_host == "local":  # a bench host's path is read there
        problem = tokenizer_problem(tokenizer)
        if problem is not None:
            raise InputError(f"--tokenizer: {problem}")
    points = SweepPlan(depths, concurrency, pp, tg, runs, cold, driver).points
    key_from_stdin = read_key_line(sys.stdin) if api_key_stdin else None
    image = recipe_hash = ""
    inventory = None
    plan = None
    if endpoint is None:
        inventory, plan = _lane_plan(ctx, recipe, cluster)
        if bench_host != "local" and bench_host not in inventory.nodes:
            nodes = ", ".join(inventory.nodes)
            raise InputError(f"--bench-host {bench_host!r}: not a node of the inventory ({nodes})")
        endpoint, image, recipe_hash = plan.endpoint, plan.recipe.image.ref, plan.recipe_hash
    elif tokenizer is None:
        raise InputError(
            "--endpoint needs --tokenizer DIR (the served model's tokenizer; with --recipe and "
            "--cluster the lane's own is read from its snapshot)"
        )
    req = BenchRequest(
        lane=recipe or lane_name or "adhoc",
        cluster=cluster or "",
        label=label,
        endpoint=endpoint.rstrip("/"),
        points=points,
        tokenizer_dir=tokenizer or Path(),
        tokenizer_source=str(tokenizer) if tokenizer else "",
        reports_dir=reports,
        runs=runs,
        warmup=not no_warmup,
        driver=driver,
        quality=quality,
        model=model,
        time_scale=time_scale if time_scale is not None else time_scale_default(),
        hang_timeout_s=hang_timeout,
        recipe_hash=recipe_hash,
        engine_image=image,
        client_host=socket.gethostname() if bench_host == "local" else bench_host,
        max_model_len=plan.recipe.serve.max_model_len if plan else None,
        adapt_prompt=adapt_prompt,
        api_key=plan.api_key if plan else key_from_stdin or endpoint_api_key(),
        head=plan.ranks[0].node if plan else "",
    )
    if events_jsonl:
        _print_events_jsonl(req, model or "", time_scale or 1.0)
        return
    table = LiveTable(points)

    def saved(path: Path) -> None:  # a cancelled sweep's PARTIAL report, for `history benches`
        recorder.put(ReportWritten(str(path)))

    async def run() -> OpEvent:
        if inventory is None or plan is None:
            if bench_host != "local":
                raise InputError("--bench-host needs --recipe and --cluster")
            return await _watch(bench(req, saved=saved), table, run_record.observe)
        async with pool_for(inventory) as pool:
            inflight = InFlight(pool, inventory)  # every other cockpit sees it on the nodes
            try:
                return await lane_run(pool, inflight)
            finally:
                await inflight.aclose()

    async def lane_run(pool: SshPool, inflight: InFlight) -> OpEvent:
        assert inventory is not None and plan is not None

        def observe(event: OpEvent) -> None:
            run_record.observe(event)
            inflight.observe(event)

        lane_req = req
        model_cache = inventory.model_cache_of(plan.cluster, plan.ranks[0].node)  # the head's
        if tokenizer is None and bench_host == "local":
            found = await lane_tokenizer(pool, plan, model_cache)
            source = f"{plan.recipe.model.repo}@{plan.recipe.model.revision} (lane snapshot)"
            lane_req = replace(req, tokenizer_dir=found, tokenizer_source=source)
        # the engine is reached through an SSH forward to the head, as on a real fleet
        local_url = await readiness.base_url(pool, plan)
        if bench_host == "local":
            return await _watch(bench(lane_req, local_url=local_url, saved=saved), table, observe)
        remote_tokenizer = str(tokenizer) if tokenizer else snapshot_dir(plan, model_cache)

        def source(served: str, scale: float) -> AsyncIterator[OpEvent]:
            argv = remote_argv(
                shlex.split(remote_cockpit), req.endpoint, served, scale, points, runs,
                req.warmup, driver, hang_timeout, req.lane, req.cluster, remote_tokenizer,
                adapt_prompt, req.api_key is not None,
            )  # fmt: skip
            return remote_events(pool, bench_host, argv, req.api_key)

        return await _watch(
            bench(lane_req, source=source, local_url=local_url, saved=saved),
            table,
            observe,
        )

    try:
        with cli_recorder() as recorder, recording(recorder) as run_record:
            last = run_interruptible(run())  # SIGTERM/SIGHUP cancel the sweep as Ctrl-C does
    except (EngineUnanswered, httpx.HTTPError) as exc:
        raise _unanswered(_engine_of(plan, endpoint), exc) from None
    for result in table.results.values():
        for flag in result.flags:
            console.print(f"[red]{escape(result.spec.label)}[/red]: {escape(flag.message)}")
            if flag.fix:
                console.print(f"  [bold]fix:[/bold] {escape(flag.fix)}")
    if isinstance(last, bev.SweepFinished):
        written = Path(last.report_json)
        if written.parent.absolute() != reports.absolute():
            console.print(
                f"[yellow]warning:[/yellow] {escape(str(reports))} could not take the report: "
                f"it is in {escape(str(written.parent))}"
            )
        console.print(f"[bold]report[/bold]: {escape(last.report_md)}")
        console.print(f"[bold]record[/bold]: {escape(str(written))} (for cockpit report show)")
        console.print(f"[bold]page[/bold]: {escape(str(written.with_suffix('.html')))}")
        report = artifacts.load_report(written)
        for chart in depth_charts(report, artifacts.baseline_of(report, written.parent), 1):
            console.print(Text.from_ansi(chart))
        if report.partial:
            console.print(f"[red]PARTIAL[/red]: {escape(report.partial)}")
        if not last.ok:
            ctx.exit(EXIT_FAILED)


async def _watch(
    events: AsyncIterator[OpEvent], table: LiveTable, record: Callable[[OpEvent], None]
) -> OpEvent:
    """The live table, from the sweep's first event on (an engine that does not answer before
    it is one line on stderr, not an empty table above it)."""
    with contextlib.ExitStack() as stack:
        live: Live | None = None

        def show(event: OpEvent) -> None:
            nonlocal live
            table.update(event)
            if live is None:
                live = Live(table.render(), console=console, refresh_per_second=4)
                stack.enter_context(live)
            live.update(table.render())
            record(event)

        last = await _consume(events, show)
    if not console.is_terminal:  # rich leaves a pipe's last row open: what follows would join it
        console.line()
    return last


@click.command(name="probe")
@click.option("--recipe")
@click.option("--cluster")
@click.option("--endpoint", callback=_endpoint, help="A base URL instead of a lane.")
@click.option(
    "--tokens", type=COUNT, default=64, show_default=True, help="Length of the streamed answer."
)
@click.pass_context
def probe_cmd(
    ctx: click.Context,
    recipe: str | None,
    cluster: str | None,
    endpoint: str | None,
    tokens: int,
) -> None:
    """8-token health check, then one stream observed at the socket (who flushes late?)."""
    lane = None if endpoint else _lane_plan(ctx, recipe, cluster)
    api_key = lane[1].api_key if lane else endpoint_api_key()

    async def observe(url: str) -> bench_probe.ProbeResult:
        async with httpx.AsyncClient(timeout=30.0, headers=auth_headers(api_key)) as http:
            listed = await served_models(http, url)
        if not listed:
            raise EngineUnanswered("/v1/models lists no model")
        model = str(listed[0].get("id", ""))
        return await bench_probe.probe(url, model, time_scale_default(), tokens, api_key)

    async def run() -> bench_probe.ProbeResult:
        if lane is None:
            return await observe(str(endpoint).rstrip("/"))
        inventory, plan = lane  # a lane's engine: through a forward from its head node
        async with pool_for(inventory) as pool:
            return await observe(await readiness.base_url(pool, plan))

    try:
        result = asyncio.run(run())
    except (EngineUnanswered, httpx.HTTPError) as exc:
        raise _unanswered(_engine_of(lane[1] if lane else None, endpoint), exc) from None
    console.print(
        f"health: 8-token chat in [bold]{result.health_latency_ms:.0f} ms[/bold] "
        f"({result.health_tokens} tokens: {escape(result.health_answer[:40])!r})"
    )
    wire = result.wire
    console.print(
        f"wire: HTTP {wire.status}, {len(wire.recv_times)} recv()s, "
        f"{len(wire.event_times)} content chunks, {wire.tokens} tokens"
    )
    if result.gaps:
        g = result.gaps
        console.print(
            f"inter-chunk gaps: p50 {g.p50_ms:.1f} ms, p90 {g.p90_ms:.1f} ms, "
            f"max {g.max_ms:.1f} ms over {g.count} gaps"
        )
    if result.time_scale != 1:
        console.print(f"(simulator ×{result.time_scale:g}: times in engine time)")
    console.print(f"verdict: [bold]{escape(result.verdict)}[/bold]")


COMMANDS = [bench_cmd, probe_cmd]
