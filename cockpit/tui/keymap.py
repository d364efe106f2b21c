"""The cockpit's keys: one BINDINGS list (with ids) that the footer, the `?` screen, the command
palette and the user's keymap overrides all read."""

from __future__ import annotations

from collections.abc import Mapping

from textual.binding import Binding

PANE_NAMES = ("Lanes", "Nodes", "NCCL", "Log", "Operations", "KV", "Engine", "Bench")
"""The panes in their layout order, as the pane bar names them; digits 1-8 focus them."""

MAIN_BINDINGS: list[Binding] = [
    Binding(
        "l", "launch", "Launch", id="launch", tooltip="Launch the selected lane on its cluster"
    ),
    Binding("s", "stop", "Stop", id="stop", tooltip="Stop the selected lane"),
    Binding("y", "sync", "Sync", id="sync", tooltip="Copy the lane's image to every node of it"),
    Binding("b", "bench", "Bench", id="bench", tooltip="Bench the selected lane (depth sweep)"),
    Binding("w", "switch", "Switch", id="switch", tooltip="Switch the lane onto its cluster"),
    Binding("g", "load", "Load", id="load", tooltip="Start or stop the demo's synthetic load"),
    Binding(
        "F",
        "fix",
        "Fix",
        id="fix",
        tooltip="Run the last refusal's fix (e.g. sync the image, then launch)",
    ),
    Binding("x", "cancel_op", "Cancel", id="cancel", tooltip="Cancel the newest operation"),
    Binding(
        "r",
        "restore",
        "Restore",
        id="restore",
        show=False,
        tooltip="Launch again the lane(s) a failed switch replaced",
    ),
    Binding("enter", "details", "Details", id="details", tooltip="Details of the selected lane"),
    Binding("slash", "search", "Search", id="search", key_display="/"),
    Binding("f", "follow", "Follow", id="follow", tooltip="Follow or pause the log tails"),
    Binding(
        "v", "level", "Log level", id="level", show=False, tooltip="Cycle the log level filter"
    ),
    Binding("n", "next_log", "Next log", id="next_log", show=False, tooltip="Next node/rank log"),
    Binding(
        "a",
        "access",
        "Access lines",
        id="access",
        show=False,
        tooltip="Show or fold the log's access lines",
    ),
    Binding("W", "wrap", "Wrap", id="wrap", show=False, tooltip="Wrap or cut long log lines"),
    Binding(
        "T", "timestamps", "Times", id="timestamps", show=False, tooltip="Show or hide log times"
    ),
    Binding(
        "ctrl+s",
        "save_log",
        "Save log",
        id="save_log",
        show=False,
        tooltip="Save the log's buffer to a file in logs/",
    ),
    Binding("m", "maximise", "Max", id="maximise", tooltip="Maximise or restore the pane"),
    Binding(
        "h",
        "past",
        "History",
        id="history",
        show=False,
        tooltip="KV, Engine and Nodes history from the store: last hour, day, week, session",
    ),
    *(
        Binding(
            str(n),
            f"pane({n})",
            name,
            id=f"pane{n}",
            show=False,
            tooltip=f"Focus the {name} pane",
        )
        for n, name in enumerate(PANE_NAMES, 1)
    ),
    Binding("t", "theme", "Theme", id="theme", tooltip="Cycle the colour theme"),
    Binding("question_mark", "help", "Help", id="help", key_display="?"),
    Binding("q", "quit", "Quit", id="quit"),
]

NODE_CHANGING: frozenset[str] = frozenset(
    {"launch", "stop", "sync", "sync_model", "bench", "switch", "restore", "fix", "sync_launch"}
)
"""Actions that change a node; `--readonly` refuses them (and says so)."""
DEMO_ONLY: frozenset[str] = frozenset({"load"})
"""Actions only `cockpit demo` has (elsewhere hidden from the footer, help and palette)."""

TAIL_BINDINGS: list[Binding] = [
    Binding(
        "right",
        "page_right",
        "Page right",
        id="log_page_right",
        show=False,
        tooltip="Scroll the focused log right by a page",
    ),
    Binding(
        "left",
        "page_left",
        "Page left",
        id="log_page_left",
        show=False,
        tooltip="Scroll the focused log left by a page",
    ),
]
"""The focused log's own keys (a cut line is read a page at a time, not one column a key)."""

BINDING_IDS: frozenset[str] = frozenset(b.id for b in (*MAIN_BINDINGS, *TAIL_BINDINGS) if b.id)
"""What a user's `[keymap]` may name."""


def key_of(binding_id: str, overrides: Mapping[str, str]) -> str:
    """The key a binding answers to, the user's first when the keymap gives several."""
    keys = overrides.get(binding_id) or next(
        b.key for b in (*MAIN_BINDINGS, *TAIL_BINDINGS) if b.id == binding_id
    )
    return keys.split(",")[0].strip()
