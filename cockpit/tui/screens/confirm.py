"""The confirmation of a node-changing operation: the exact plan, then yes or no."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from cockpit.events import Planned


def plan_text(planned: Planned) -> Text:
    """What will happen, step by step, as the operation itself planned it."""
    where = "@".join(part for part in (planned.lane, planned.cluster) if part)
    out = Text()
    out.append(f"{planned.op} {where}\n", style="bold")
    if planned.summary:
        out.append(f"{planned.summary}\n")
    if planned.memory:
        out.append(f"{planned.memory}\n")
    out.append("\n")
    for i, step in enumerate(planned.steps, 1):
        out.append(f"{i:>2}. {step}\n")
    return out


class ConfirmScreen(ModalScreen[bool]):
    """Dismisses with True only on an explicit yes; escape, n or the button say no."""

    CSS_PATH = "screens.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes, run it", id="confirm_yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm_no"),
    ]

    def __init__(self, planned: Planned, warning: str = "") -> None:
        """`warning`: what the nodes report that this plan runs into (`confirm_warning`)."""
        super().__init__()
        self.planned = planned
        self.warning = warning

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(f"Confirm {self.planned.op}", style="bold"), id="dialog-title")
            if self.warning:
                yield Static(Text(f"⚠ {self.warning}"), id="dialog-warning")
            with VerticalScroll(id="plan"):
                yield Static(plan_text(self.planned), id="plan-text")
            with Horizontal(id="dialog-buttons"):
                yield Button(
                    "Run it anyway (y)" if self.warning else "Run it (y)",
                    variant="warning",
                    id="yes",
                )
                yield Button("Cancel (n)", variant="primary", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
