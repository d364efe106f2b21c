"""The history store as a command records into it: opened before the operation, written when it
ends. History is never worth a failed operation: a store that cannot be written, or a broken
`[history]` setting, is one warning on stderr."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import click

from cockpit.history.recorder import Recorder
from cockpit.redact import shown


@contextmanager
def cli_recorder() -> Iterator[Recorder]:
    recorder = Recorder.open()
    try:
        yield recorder
    finally:
        recorder.close()
        if recorder.setting_problem:
            click.echo(f"warning: {shown(recorder.setting_problem)}", err=True)
        if recorder.writer.problem:
            click.echo(f"warning: history not recorded: {shown(recorder.writer.problem)}", err=True)
