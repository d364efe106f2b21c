"""Command groups that answer a mistyped command with the nearest one, in one line (exit 2).

click's own answer is four lines (usage, a help hint, a blank, "No such command") and guesses
nothing; an operator who typed `cockpit statsu` wants `status` named.
"""

from __future__ import annotations

import difflib

import click

from cockpit.errors import InputError


def unknown_command(typed: str, known: list[str], path: str = "") -> str:
    """The refusal of `typed` (under the group `path`, e.g. "report"), with its nearest match."""
    prefix = f"{path} " if path else ""
    close = difflib.get_close_matches(typed, known, n=1)
    if close:
        return f"no command '{prefix}{typed}'; did you mean '{prefix}{close[0]}'?"
    return f"no command '{prefix}{typed}' (commands: {', '.join(known)})"


def group_path(ctx: click.Context) -> str:
    """The subcommand words that led to this group (`report`, `sim`; "" for `cockpit` itself)."""
    words = []
    while ctx.parent is not None:
        words.append(ctx.info_name or "")
        ctx = ctx.parent
    return " ".join(reversed(words))


class GuidedGroup(click.Group):
    """A group whose unknown subcommand is refused in one line naming the nearest command."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError:
            typed = args[0]
            if typed.startswith("-"):  # an unknown option, not a command: click's answer stands
                raise
            known = self.list_commands(ctx)
            raise InputError(unknown_command(typed, known, group_path(ctx))) from None


def usage_line(exc: click.UsageError) -> str:
    """A bad option or value in one line (click prints four: usage, a help hint, a blank, the
    error), naming the option and the command whose --help lists the rest."""
    message = " ".join(exc.format_message().split())
    if exc.ctx is None:
        return message
    command = " ".join(word for word in ("cockpit", group_path(exc.ctx)) if word)
    return f"{message} ({command} --help)"
