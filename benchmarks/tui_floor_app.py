"""The floor of `tui_keys.py`: an almost empty Textual app with the cockpit's eight pane titles,
the same `?` (a help over the panes) and the same `m` (maximise / restore), measured by the same
harness under the same load, so that what the harness, tmux and a loaded machine add is known."""

from __future__ import annotations

from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

TITLES = ("Lanes", "Nodes", "NCCL", "Log", "Operations", "KV", "Engine", "Bench")


class Help(ModalScreen[None]):
    CSS = "Help { align: center middle; background: $background; } #keys { height: 12; }"
    BINDINGS: ClassVar[list[BindingType]] = [("escape,question_mark", "dismiss", "close")]

    def compose(self) -> ComposeResult:
        yield Static("Keys  (ctrl+p: command palette · esc: close)", id="keys")


class Floor(App[None]):
    CSS = "Static { height: 1fr; border: round $primary; } Vertical { width: 1fr; }"
    BINDINGS: ClassVar[list[BindingType]] = [
        ("m", "maximise", "maximise"),
        ("question_mark", "help", "help"),
        ("q", "quit", "quit"),
    ]

    def compose(self) -> ComposeResult:
        with Horizontal():
            for column in (TITLES[:4], TITLES[4:]):
                with Vertical():
                    for title in column:
                        pane = Static(title, id=title.lower())
                        pane.border_title = title
                        pane.can_focus = True
                        yield pane

    def on_mount(self) -> None:
        self.query_one("#lanes").focus()

    def action_help(self) -> None:
        self.push_screen(Help())

    def action_maximise(self) -> None:
        if self.screen.maximized is not None:
            self.screen.minimize()
        else:
            self.screen.maximize(self.focused)


if __name__ == "__main__":
    Floor().run()
