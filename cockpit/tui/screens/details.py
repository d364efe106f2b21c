"""Enter on a lane: its recipe, placement, endpoint, state and recent operations."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from cockpit.config.models import Recipe
from cockpit.tui.state.views import LaneView, OpView


def lane_table(lane: LaneView, recipe: Recipe, ops: tuple[OpView, ...]) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    serve = recipe.serve
    rows = [
        ("lane", lane.lane),
        ("cluster", f"{lane.cluster}: {', '.join(lane.nodes)}"),
        ("state", lane.state_text),
        *(
            [("orphaned", f"{lane.orphaned}\nstop it: s, or {lane.stop_fix}")]
            if lane.orphaned
            else []
        ),
        ("endpoint", lane.endpoint or "–"),
        ("image", recipe.image.ref),
        ("image on nodes", {None: "unknown yet", True: "all", False: "missing"}[lane.image_ok]),
        ("model", f"{recipe.model.repo} @ {recipe.model.revision}"),
        ("tensor parallel", str(recipe.lane.tensor_parallel_size)),
        (
            "serve",
            f"max-model-len {serve.max_model_len}, max-num-seqs {serve.max_num_seqs}, "
            f"batched {serve.max_num_batched_tokens}, gmu {serve.gpu_memory_utilization}",
        ),
        ("last bench", lane.bench_headline or "–"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    for op in ops:
        outcome = "running" if op.running else ("ok" if op.ok else "failed")
        table.add_row(f"{op.op}", f"{outcome}: {op.summary or op.current}")
    return table


class DetailsScreen(ModalScreen[None]):
    CSS_PATH = "screens.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,enter,q", "dismiss", "Close", id="details_close")
    ]

    def __init__(self, lane: LaneView, recipe: Recipe, ops: tuple[OpView, ...]) -> None:
        super().__init__()
        self.lane, self.recipe, self.ops = lane, recipe, ops

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(f"Lane {self.lane.key}", id="dialog-title")
            with VerticalScroll(id="plan"):
                yield Static(lane_table(self.lane, self.recipe, self.ops))

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
