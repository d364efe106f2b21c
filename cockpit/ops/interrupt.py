"""SIGINT, SIGTERM and SIGHUP all take an operation's rollback path; a second signal aborts.

`timeout`, systemd and a closed terminal send SIGTERM or SIGHUP, not Ctrl-C: the first of any of
the three cancels the running command's main task, so every operation unwinds as it does on
Ctrl-C (a launch removes its ranks, every operation releases its locks). A second signal, while
that rollback runs, ends the process at once with the signal's default action.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from cockpit.errors import CockpitError

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
T = TypeVar("T")


class Interrupted(CockpitError):
    """The command was stopped by a signal after its operation rolled back (exit 128 + signal)."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.exit_code = 128 + signum
        name = signal.Signals(signum).name
        super().__init__(f"interrupted by {name}: the operation rolled back")


def abort_now(signum: int) -> None:
    """End the process with the signal's default action (no cleanup: the operator insisted)."""
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def exit_if_stuck(code: int, grace_s: float) -> Callable[[], None]:
    """End the process with `code` unless the returned cancel is called within `grace_s`.

    For the TUI's way out after a signal: once its terminal is gone, Textual's shutdown can block
    for good in a full writer queue, with the event loop stuck, so no later signal is ever handled
    (seen: `cockpit tui` processes left behind by `tmux kill-server`). A thread's timer still runs.
    """
    timer = threading.Timer(grace_s, os._exit, args=(code,))
    timer.daemon = True
    timer.start()
    return timer.cancel


def install(
    loop: asyncio.AbstractEventLoop,
    first: Callable[[int], None],
    at_once: Callable[[int], None] | None = None,
) -> Callable[[], None]:
    """Route the three signals to `first(signum)` once, then to `abort_now`; returns the undo.

    `first` runs on the event loop; `at_once(signum)`, when given, runs in the main thread the
    moment the first signal arrives, even while the loop's thread is blocked (in a lock, a queue)
    and the loop would never get to `first`: for a watchdog thread (`exit_if_stuck`)."""
    received: list[int] = []

    def on_signal(signum: int) -> None:
        if received:
            abort_now(signum)
        received.append(signum)
        first(signum)

    armed: list[int] = []

    def raw(signum: int, _frame: object) -> None:
        # the C-level handler has written the signal to the loop's wakeup fd already
        if at_once is not None and not armed:
            armed.append(signum)
            at_once(signum)

    for sig in SIGNALS:
        loop.add_signal_handler(sig, on_signal, sig)
        if at_once is not None:
            signal.signal(sig, raw)  # in place of asyncio's no-op Python-level handler

    def undo() -> None:
        for sig in SIGNALS:
            loop.remove_signal_handler(sig)

    return undo


def run_interruptible(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)`, where a signal cancels `main` (it rolls back) and raises Interrupted.

    Signals reach only the main thread: a command run from another thread (a test calling the
    CLI in a worker thread, an embedding program) runs without the handlers."""
    if threading.current_thread() is not threading.main_thread():
        return asyncio.run(main)

    async def runner() -> T:
        task = asyncio.current_task()
        assert task is not None
        received: list[int] = []

        def cancel(signum: int) -> None:
            received.append(signum)
            task.cancel()

        undo = install(asyncio.get_running_loop(), cancel)
        try:
            return await main
        except asyncio.CancelledError:
            if received:
                raise Interrupted(received[0]) from None
            raise
        finally:
            undo()

    return asyncio.run(runner())


@contextmanager
def blocking_call() -> Iterator[None]:
    """Around a blocking call on the loop's thread (a confirmation prompt): a signal raises
    Interrupted inside the call at once. The loop's handlers would run only once it returned, so
    Ctrl-C at `Run this plan?` did nothing until the operator typed an answer."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, _frame: object) -> None:
        raise Interrupted(signum)

    wakeup = signal.set_wakeup_fd(-1)  # else the loop would see the signal again afterwards
    previous = {sig: signal.signal(sig, stop) for sig in SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        signal.set_wakeup_fd(wakeup)
