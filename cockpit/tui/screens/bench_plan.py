"""The bench plan editor `b` opens: depths, concurrency, runs, sizes, warm/cold and driver of the
sweep, prefilled with the lane's last plan, checked as `cockpit bench` checks its options.

Keyboard first: Tab moves between fields, the arrows pick a choice, Enter plans the bench (the
operation's own plan is then confirmed as every other one), Escape leaves nothing changed. A bad
field says why under it and keeps the button off (Enter takes the cursor to it instead); the
reading and the rules are `cockpit.bench.sweep_plan`'s, the CLI's own.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.events import Resize
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, RadioButton, RadioSet, Static

from cockpit.bench.models import SweepPlan
from cockpit.bench.sweep_plan import (
    DRIVERS,
    FIELDS,
    beyond_context,
    context_note,
    read_plan,
    written,
)
from cockpit.tui.operations import LaneTarget
from cockpit.tui.widgets.activity import ALWAYS_SHOWN

ROWS = {  # field: (label, what it is, as `cockpit bench --help` says)
    "depths": ("depths", "context tokens, comma list: 4096 or 4K"),
    "concurrency": ("concurrency", "streams at once, comma list"),
    "runs": ("runs", "per point (>1: spread, noisy flag)"),
    "pp": ("pp", "prompt tokens of each request"),
    "tg": ("tg", "response tokens of each request"),
}
MODES = ("warm", "cold")
HINTS_FROM = 100  # columns: narrower, the hints beside the fields are left out


class Choice(RadioSet):
    """A choice of a few words picked with the arrows (there is nothing to browse first) or space;
    Enter stays the form's."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("down,right", "pick(1)", "Next", show=False),
        Binding("up,left", "pick(-1)", "Previous", show=False),
    ]

    def action_pick(self, step: int) -> None:
        buttons = list(self.query(RadioButton))
        buttons[(self.pressed_index + step) % len(buttons)].value = True


def plan_summary(plan: SweepPlan, max_model_len: int | None) -> str:
    """What Enter will plan, in one line: points measured, runs, mode, driver."""
    measured = len(plan.points) - len(beyond_context(plan.points, max_model_len))
    mode = "COLD prefix" if plan.cold else "warm prefix"
    return f"{measured} points × {plan.runs} runs, each after a warm-up · {mode} · {plan.driver}"


class BenchPlanScreen(ModalScreen[SweepPlan | None]):
    """Dismisses with the plan on Enter (or the button) when every field reads; None on Escape."""

    CSS_PATH: ClassVar[list[str]] = ["screens.tcss", "bench_plan.tcss"]
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "run", "Plan it", priority=True, id="bench_plan_run"),
        Binding("escape", "cancel", "Cancel", id="bench_plan_cancel"),
    ]

    def __init__(
        self, target: LaneTarget, start: SweepPlan, max_model_len: int | None, origin: str
    ) -> None:
        """`start`: the plan the fields show first; `origin`: where it came from (said above them:
        "your last plan of this lane"); `max_model_len`: the lane's, beyond which points skip."""
        super().__init__()
        self.target = target
        self.start = start
        self.max_model_len = max_model_len
        self.origin = origin
        self.plan: SweepPlan | None = start

    def compose(self) -> ComposeResult:
        texts = written(self.start)
        with Vertical(id="dialog"):
            where = f"{self.target.lane}@{self.target.cluster}"
            yield Static(Text(f"Bench plan · {where}", style="bold"), id="dialog-title")
            limit = f"max-model-len {self.max_model_len:,}" if self.max_model_len else ""
            origin = f"from {self.origin}"
            yield Static(" · ".join(p for p in (origin, limit) if p), classes="plan-origin")
            for name, (label, hint) in ROWS.items():
                with Horizontal(classes="plan-row"):
                    yield Label(label, classes="plan-label")
                    yield Input(texts[name], id=name, compact=True)
                    yield Static(hint, classes="plan-hint")
                yield Static(id=f"{name}-why", classes="plan-why")
            with Horizontal(classes="plan-row"):
                yield Label("prefix", classes="plan-label")
                yield Choice(
                    *(
                        RadioButton(m, value=(m == "cold") == self.start.cold, id=f"mode-{m}")
                        for m in MODES
                    ),
                    id="mode",
                    compact=True,
                )
                yield Static("cold: context + prompt in one request", classes="plan-hint")
            with Horizontal(classes="plan-row"):
                yield Label("driver", classes="plan-label")
                yield Choice(
                    *(
                        RadioButton(d, value=d == self.start.driver, id=f"driver-{d}")
                        for d in DRIVERS
                    ),
                    id="driver",
                    compact=True,
                )
                yield Static("the client sending the requests", classes="plan-hint")
            yield Static(id="plan-summary")
            with Horizontal(id="dialog-buttons"):
                yield Button("Plan it (enter)", variant="warning", id="run")
                yield Button("Cancel (esc)", variant="primary", id="cancel")

    def on_resize(self, event: Resize) -> None:
        self.set_class(event.size.width < HINTS_FROM, "-narrow")  # the fields keep the room

    def on_mount(self) -> None:
        for button in self.query(Button):
            button.can_focus = False  # Tab goes field to field; Enter and Escape are the answers
        self.check()
        self.query_one("#depths", Input).focus()

    @on(Input.Changed)
    @on(RadioSet.Changed)
    def check(self) -> None:
        """Read the fields again: each bad one says why under it, the plan holds only when none
        is bad, and the button follows."""
        texts = {name: self.query_one(f"#{name}", Input).value for name in FIELDS}
        cold = self.query_one("#mode-cold", RadioButton).value
        driver = next(d for d in DRIVERS if self.query_one(f"#driver-{d}", RadioButton).value)
        plan, errors = read_plan(texts, cold=cold, driver=driver)
        notes: dict[str, str] = {}
        if plan is not None:
            note, refused = context_note(plan, self.max_model_len)
            (errors if refused else notes)["depths"] = note
            beyond = [c for c in plan.concurrency if c not in ALWAYS_SHOWN]
            if beyond:
                listed = ", ".join(f"c{c}" for c in beyond)
                notes["concurrency"] = f"{listed}: Bench pane columns where they fit (m: all)"
        self.plan = None if errors else plan
        for name in FIELDS:
            why = self.query_one(f"#{name}-why", Static)
            text = errors.get(name) or notes.get(name, "")
            why.update(text)
            why.set_class(bool(text), "-shown")
            why.set_class(name in errors, "-error")
            self.query_one(f"#{name}", Input).set_class(name in errors, "-bad")
        summary = self.query_one("#plan-summary", Static)
        summary.update(
            plan_summary(self.plan, self.max_model_len)
            if self.plan
            else "fix the field(s) marked above"
        )
        self.query_one("#run", Button).disabled = self.plan is None

    def action_run(self) -> None:
        """Plan the bench; with a bad field, ring and take the cursor to it instead."""
        if self.plan is None:
            self.app.bell()
            self.query_one(".-bad", Input).focus()
            return
        self.dismiss(self.plan)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "run":
            self.action_run()
        else:
            self.action_cancel()
