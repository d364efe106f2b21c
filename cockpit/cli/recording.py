"""The history store as a command records into it: opened before the operation, written when it
ends. History is never worth a failed operation: a store that cannot be written, or a broken
`[history]` setting, is one warning on stderr."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import click

from cockpit.errors import InputError
from cockpit.history.recorder import Recorder
from cockpit.history.settings import retention_days
from cockpit.redact import shown


@contextmanager
def cli_recorder() -> Iterator[Recorder]:
    problems = []
    try:
        days = retention_days()
    except InputError as exc:
        days = None  # nothing is pruned on a setting that cannot be read
        problems.append(f"{exc} (nothing pruned)")
    recorder = Recorder.open(retention_days=days)
    try:
        yield recorder
    finally:
        recorder.close()
        if recorder.problem:
            problems.append(f"history not recorded: {recorder.problem}")
        for problem in problems:
            click.echo(f"warning: {shown(problem)}", err=True)
