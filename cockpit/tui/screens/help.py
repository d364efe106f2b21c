"""`?`: every key of the main screen, read from its active bindings (so keymap overrides show)."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


def keys_table(rows: list[tuple[str, str, str]], readonly: bool) -> Table:
    table = Table(box=None, padding=(0, 2), show_header=True, header_style="bold")
    table.add_column("key", no_wrap=True)
    table.add_column("does")
    table.add_column("")
    for key, description, note in rows:
        table.add_row(key, description, note)
    if readonly:
        table.caption = "read-only: keys that change a node are disabled"
    return table


class HelpScreen(ModalScreen[None]):
    CSS_PATH = "screens.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "dismiss", "Close", id="help_close")
    ]

    def __init__(self, rows: list[tuple[str, str, str]], readonly: bool) -> None:
        super().__init__()
        self.rows = rows
        self.readonly = readonly

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static("Keys  (ctrl+p: command palette · esc: close)", id="dialog-title")
            with VerticalScroll(id="plan"):
                yield Static(keys_table(self.rows, self.readonly))

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
