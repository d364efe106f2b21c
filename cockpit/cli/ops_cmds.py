"""`launch`, `stop`, `sync-image`, `sync-model`, `switch`: the lane operations, printed with rich
progress bars.

Each command runs one operation (an async generator of events, `cockpit.ops`) and prints its
events: the plan, a progress bar per node and step, warnings/errors as one line each, and the
final summary. When stdout is not a terminal (a pipe, a log file, CI) the same events are plain
lines instead: one per step change and progress at a bounded rate, never ANSI. The exit code is
the operation's: 0 done, 1 failed on the nodes, 2 refused; 128 + N after signal N rolled it back.
"""

from __future__ import annotations

import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from cockpit import events as ev
from cockpit.cli.bounds import SECONDS, SECONDS_OR_ZERO
from cockpit.cli.usable import usable_inventory
from cockpit.errors import InputError
from cockpit.ops.interrupt import blocking_call, run_interruptible

if TYPE_CHECKING:
    from cockpit.config import Inventory
    from cockpit.history.recorder import OpRecording
    from cockpit.ops.context import OpContext
    from cockpit.ops.locks import BreakLock, NodeLock

console = Console(highlight=False, soft_wrap=True, emoji=False)  # `:x:` is no emoji


def _inventory(ctx: click.Context) -> Path | None:
    return (ctx.obj or {}).get("inventory")


class EventPrinter:
    """Turns events into rich output: one bar per (step, node), one line per notice."""

    def __init__(self, out: Console) -> None:
        self.out = out
        self.bars = Progress(
            TextColumn("{task.fields[node]:>8} {task.description}"),
            BarColumn(),
            TextColumn("{task.fields[info]}"),
            TimeElapsedColumn(),
            console=out,
            transient=False,
        )
        self.tasks: dict[tuple[str, str], TaskID] = {}
        self.exit_code = 0

    def asking(self, ask: BreakLock) -> BreakLock:
        """`ask` with the bars stopped while it waits for its answer: live, they would hold the
        question back until a line ended and read its `[y/N]` as markup."""

        async def paused(node: str, lock: NodeLock) -> bool:
            live = bool(self.tasks)
            if live:
                self.bars.stop()
            try:
                return await ask(node, lock)
            finally:
                if live:
                    self.bars.start()

        return paused

    def _bar(self, step: str, node: str | None) -> TaskID:
        key = (step, node or "")
        if not self.tasks:
            self.bars.start()
        if key not in self.tasks:
            self.tasks[key] = self.bars.add_task(step, total=None, node=node or "", info="")
        return self.tasks[key]

    def show(self, event: ev.OpEvent) -> None:
        match event:
            case ev.Planned(summary=summary, memory=memory):
                self.out.print(f"[bold]{escape(event.op)}[/bold]: {escape(summary)}")
                if memory:
                    self.out.print(f"  {escape(memory)}")
            case ev.StepStarted(step=step, node=node) if not step.startswith("boot/"):
                self._bar(step, node)
            case ev.StepStarted(step=step, node=node):
                self.bars.update(self._bar("boot", node), info=step.removeprefix("boot/"))
            case ev.Progress(step=step, node=node):
                task = self._bar(step, node)
                info = event.message or _bytes_info(event)
                if event.eta_s is not None:
                    info += f" (~{duration(event.eta_s)} left)"
                self.bars.update(task, completed=event.done, total=event.total, info=escape(info))
            case ev.StepFinished(step=step, node=node, ok=ok, detail=detail):
                if step.startswith("boot/"):
                    return
                task = self._bar(step, node)
                mark = "[green]ok[/green]" if ok else "[red]failed[/red]"
                total = self.bars.tasks[task].total or 1
                self.bars.update(
                    task,
                    completed=total if ok else None,
                    total=total,
                    info=f"{mark} {escape(detail)}",
                )
            case ev.Notice(severity=severity, message=message, line=line):
                color = {"info": "cyan", "warning": "yellow", "error": "red"}[severity.value]
                where = f"{event.node}: " if event.node and event.node not in message else ""
                self.bars.console.print(
                    f"[{color}]{severity.value}:[/{color}] {escape(where + message)}"
                )
                if line:
                    self.bars.console.print(f"    [dim]{escape(line)}[/dim]")
            case ev.Finished(ok=ok, summary=summary, exit_code=code):
                if self.tasks:
                    self.bars.stop()
                color = "green" if ok else "red"
                word = "done" if ok else ("refused" if code == 2 else "failed")
                self.out.print(f"[{color}]{word}:[/{color}] {escape(summary)}")
                self.exit_code = code


PLAIN_EVERY_FRACTION = 0.10
PLAIN_EVERY_S = 5.0


class PlainPrinter:
    """Events as plain lines for a pipe or a log: every step change, a notice or the end at once;
    progress of a (step, node) when it moved by 10 % or 5 s passed since its last line."""

    def __init__(self, write: Callable[[str], None], clock: Callable[[], float] = time.monotonic):
        self.write = write
        self.clock = clock
        self.last: dict[tuple[str, str], tuple[float, float | None]] = {}  # (at, fraction)
        self.exit_code = 0

    def _line(self, node: str | None, text: str) -> None:
        self.write(f"{node or '-':>8} {text}")

    def _progress(self, event: ev.Progress) -> None:
        key = (event.step, event.node or "")
        now, fraction = self.clock(), event.fraction
        at, shown = self.last.get(key, (None, None))
        moved = fraction is not None and (shown is None or fraction - shown >= PLAIN_EVERY_FRACTION)
        if at is not None and not moved and now - at < PLAIN_EVERY_S:
            return
        self.last[key] = (now, fraction)
        info = event.message or _bytes_info(event)
        pct = f"{100 * fraction:.0f}% " if fraction is not None and not event.message else ""
        eta = f" (~{duration(event.eta_s)} left)" if event.eta_s is not None else ""
        self._line(event.node, f"{event.step}: {pct}{info}{eta}")

    def show(self, event: ev.OpEvent) -> None:
        match event:
            case ev.Planned(summary=summary, memory=memory):
                self.write(f"{event.op}: {summary}")
                if memory:
                    self.write(f"  {memory}")
            case ev.StepStarted(step=step, node=node) if step.startswith("boot/"):
                self._line(node, f"boot: {step.removeprefix('boot/')}")
            case ev.StepStarted(step=step, node=node):
                self._line(node, f"{step}: started")
            case ev.Progress():
                self._progress(event)
            case ev.StepFinished(step=step) if step.startswith("boot/"):
                return
            case ev.StepFinished(step=step, node=node, ok=ok, detail=detail):
                self._line(
                    node, f"{step}: {'ok' if ok else 'failed'}" + (f" {detail}" if detail else "")
                )
            case ev.Notice(severity=severity, message=message, line=line):
                where = f"{event.node}: " if event.node and event.node not in message else ""
                self.write(f"{severity.value}: {where}{message}")
                if line:
                    self.write(f"    {line}")
            case ev.Finished(ok=ok, summary=summary, exit_code=code):
                word = "done" if ok else ("refused" if code == 2 else "failed")
                self.write(f"{word}: {summary}")
                self.exit_code = code


def duration(seconds: float) -> str:
    """`45s`, `3m05s`, `2h07m`: an ETA as an operator reads it."""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def _bytes_info(event: ev.Progress) -> str:
    if event.unit != "B":
        return f"{event.done:.0f}{event.unit}"
    rate = f" {event.rate / 2**20:.1f} MiB/s" if event.rate else ""
    return f"{event.done / 2**20:.1f} MiB{rate}"


async def _run(
    inventory: Inventory,
    make: Callable[[OpContext], AsyncIterator[ev.OpEvent]],
    recording: OpRecording,
    breaker: BreakLock | None,
) -> int:
    from cockpit.ops.context import OpContext
    from cockpit.ops.inflight import InFlight
    from cockpit.ssh.inventory import pool_for  # imported here: `cockpit --help` stays fast

    printer: EventPrinter | PlainPrinter
    if console.is_terminal:
        printer = EventPrinter(console)
    else:
        printer = PlainPrinter(lambda text: print(text, flush=True))
    async with pool_for(inventory, one_shot=True) as pool:  # no next attempt to announce
        inflight = InFlight(pool, inventory)  # every other cockpit sees it on the nodes
        try:
            if breaker is not None and isinstance(printer, EventPrinter):
                breaker = printer.asking(breaker)
            async for event in make(OpContext(inventory, pool, break_lock=breaker)):
                printer.show(event)
                recording.observe(event)
                inflight.observe(event)
        finally:
            await inflight.aclose()
    return printer.exit_code


def _run_recorded(
    inventory: Inventory,
    make: Callable[[OpContext], AsyncIterator[ev.OpEvent]],
    breaker: BreakLock | None = None,
) -> int:
    """Run the operation until it ends or a signal rolls it back, recorded in the history."""
    from cockpit.cli.recording import cli_recorder
    from cockpit.history.recorder import recording

    with cli_recorder() as recorder, recording(recorder) as run:
        return run_interruptible(_run(inventory, make, run, breaker))


NO_BREAK_ANSWER = (
    "lock not broken: no answer to 'Break this lock?' (stdin is not a terminal, or it ended); "
    "nothing changed: pass --yes with --break-lock to break it without asking"
)


def _breaker(break_lock: bool, yes: bool) -> BreakLock | None:
    """`--break-lock`: a live lock in the operation's way is broken once the operator, shown
    whose it is, says so (`--yes`: without asking). The operation records it in the history."""
    if not break_lock:
        return None

    async def confirm(node: str, lock: NodeLock) -> bool:
        if yes:
            return True
        question = f"{node} is locked: {lock.held_message()}. Break this lock?"
        try:
            with blocking_call():  # Ctrl-C at the prompt ends it at once
                return click.confirm(question, default=False)
        except click.Abort:  # end of input: no answer will ever come
            raise InputError(NO_BREAK_ANSWER) from None

    return confirm


def _break_lock_option(command: Callable[..., None]) -> Callable[..., None]:
    return click.option(
        "--break-lock",
        is_flag=True,
        help="Break a live lock of another operation in the way (shows whose, asks first; "
        "recorded in the history).",
    )(command)


def _yes_option(command: Callable[..., None]) -> Callable[..., None]:
    return click.option(
        "--yes", "-y", is_flag=True, help="Do not ask before breaking a lock (--break-lock)."
    )(command)


def _exit(code: int) -> None:
    sys.exit(code)


@click.command("launch")
@click.option("--recipe", "-r", required=True, help="Lane recipe to launch.")
@click.option("--cluster", "-c", required=True, help="Cluster to launch it on.")
@click.option("--sync-image", is_flag=True, help="Sync the image to nodes that lack it first.")
@click.option("--sync-model", is_flag=True,
              help="Copy the model snapshot to nodes that lack it first (from one that holds it)."
              )  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Print the plan and the rank commands only.")
@click.option("--boot-timeout", type=SECONDS, default=None, help="Seconds before a boot fails.")
@click.option("--stall-timeout", type=SECONDS, default=None,
              help="Seconds without boot progress on any rank before the lane counts as hung "
                   "(default 600).")  # fmt: skip
@click.option("--ready-watch", type=SECONDS_OR_ZERO, default=None,
              help="Seconds every rank must stay up after ready (default 3).")  # fmt: skip
@_break_lock_option
@_yes_option
@click.pass_context
def launch_cmd(
    ctx: click.Context,
    recipe: str,
    cluster: str,
    sync_image: bool,
    sync_model: bool,
    dry_run: bool,
    boot_timeout: float | None,
    stall_timeout: float | None,
    ready_watch: float | None,
    break_lock: bool,
    yes: bool,
) -> None:
    """Preflight, start and follow a lane to ready (rolled back on failure)."""
    from cockpit.ops.launch import launch

    inventory = usable_inventory(_inventory(ctx), cluster)
    chosen = inventory.recipe(recipe)
    timing = _timing(boot_timeout, stall_timeout, ready_watch)
    _exit(
        _run_recorded(
            inventory,
            lambda c: launch(c, chosen, cluster, sync_image=sync_image, sync_model=sync_model,
                             dry_run=dry_run, **timing),
            _breaker(break_lock, yes),
        )
    )  # fmt: skip


def _timing(boot: float | None, stall: float | None, watch: float | None) -> dict[str, float]:
    """The launch's timing options that were given (the operation's defaults for the rest)."""
    given = {"boot_timeout_s": boot, "stall_timeout_s": stall, "ready_watch_s": watch}
    return {k: v for k, v in given.items() if v is not None}


@click.command("stop")
@click.option("--lane", "-l", default=None, help="Lane (recipe name) to stop wherever it runs.")
@click.option("--cluster", "-c", default=None, help="Stop every lane on this cluster's nodes.")
@_break_lock_option
@_yes_option
@click.pass_context
def stop_cmd(
    ctx: click.Context, lane: str | None, cluster: str | None, break_lock: bool, yes: bool
) -> None:
    """Stop and remove a lane's containers; verify the GPUs are released."""
    from cockpit.ops.stop import stop

    inventory = usable_inventory(_inventory(ctx), cluster)
    if lane is not None:  # a typo is refused with the nearest name before a node is asked
        try:
            inventory.recipe(lane)
        except InputError as exc:
            raise InputError(f"--lane: {exc}") from None
    _exit(
        _run_recorded(
            inventory, lambda c: stop(c, lane=lane, cluster=cluster), _breaker(break_lock, yes)
        )
    )


def _known_source(inventory: Inventory, source: str | None) -> None:
    """`--from` names a node of the inventory, or the command is refused before any is asked."""
    if source is not None and source not in inventory.nodes:
        nodes = ", ".join(inventory.nodes)
        raise InputError(f"--from {source!r}: not a node of the inventory ({nodes})")


@click.command("sync-image")
@click.option("--recipe", "-r", required=True)
@click.option("--cluster", "-c", required=True)
@click.option("--from", "source", default=None, help="Source node (default: one holding it).")
@_break_lock_option
@_yes_option
@click.pass_context
def sync_cmd(
    ctx: click.Context, recipe: str, cluster: str, source: str | None, break_lock: bool, yes: bool
) -> None:
    """Copy the lane's image node to node, re-attach its digest, verify its id."""
    from cockpit.ops.sync import sync_image

    inventory = usable_inventory(_inventory(ctx), cluster)
    chosen = inventory.recipe(recipe)
    _known_source(inventory, source)
    _exit(
        _run_recorded(
            inventory, lambda c: sync_image(c, chosen, cluster, source), _breaker(break_lock, yes)
        )
    )


@click.command("sync-model")
@click.option("--recipe", "-r", required=True)
@click.option("--cluster", "-c", required=True)
@click.option("--from", "source", default=None,
              help="Source node (default: the first whose snapshot matches the pins).")  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Print the plan only.")
@_break_lock_option
@_yes_option
@click.pass_context
def sync_model_cmd(
    ctx: click.Context,
    recipe: str,
    cluster: str,
    source: str | None,
    dry_run: bool,
    break_lock: bool,
    yes: bool,
) -> None:
    """Copy the recipe's model snapshot node to node to the nodes lacking it; verify."""
    from cockpit.ops.model_sync import sync_model

    inventory = usable_inventory(_inventory(ctx), cluster)
    chosen = inventory.recipe(recipe)
    _known_source(inventory, source)
    _exit(
        _run_recorded(
            inventory,
            lambda c: sync_model(c, chosen, cluster, source, dry_run),
            _breaker(break_lock, yes),
        )
    )


NO_ANSWER = (
    "switch not confirmed: no answer to 'Run this plan?' (stdin is not a terminal, or it ended); "
    "nothing changed: pass --yes to run the plan without asking"
)


@click.command("switch")
@click.option("--recipe", "-r", required=True)
@click.option("--cluster", "-c", required=True)
@click.option("--yes", "-y", is_flag=True,
              help="Do not ask for confirmation (of the plan, of --break-lock).")  # fmt: skip
@click.option(
    "--restore-on-failure",
    is_flag=True,
    help="If the new lane fails, launch the lane(s) that served before again.",
)
@click.option("--boot-timeout", type=SECONDS, default=None)
@click.option("--stall-timeout", type=SECONDS, default=None)
@click.option("--ready-watch", type=SECONDS_OR_ZERO, default=None)
@_break_lock_option
@click.pass_context
def switch_cmd(
    ctx: click.Context,
    recipe: str,
    cluster: str,
    yes: bool,
    restore_on_failure: bool,
    boot_timeout: float | None,
    stall_timeout: float | None,
    ready_watch: float | None,
    break_lock: bool,
) -> None:
    """Stop what occupies the cluster, sync if needed, launch the lane (one confirmed plan)."""
    from cockpit.ops.switch import switch

    inventory = usable_inventory(_inventory(ctx), cluster)
    chosen = inventory.recipe(recipe)
    timing = _timing(boot_timeout, stall_timeout, ready_watch)

    async def confirm(planned: ev.Planned) -> bool:
        if yes:
            return True
        try:
            with blocking_call():  # Ctrl-C (or SIGTERM, SIGHUP) at the prompt ends it at once
                return click.confirm("Run this plan?", default=False)
        except click.Abort:  # end of input: a pipe, /dev/null, CI; no answer will ever come
            raise InputError(NO_ANSWER) from None

    _exit(
        _run_recorded(
            inventory,
            lambda c: switch(c, chosen, cluster, confirm=confirm,
                             restore_on_failure=restore_on_failure, **timing),
            _breaker(break_lock, yes),
        )
    )  # fmt: skip


COMMANDS = [launch_cmd, stop_cmd, sync_cmd, sync_model_cmd, switch_cmd]
