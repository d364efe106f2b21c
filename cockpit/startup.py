"""The garbage collector, paused while a command starts.

Start-up allocates objects that live as long as the process (the TUI's imports alone leave 127k
for the collector to track: modules, pydantic schemas, asyncssh, Textual); a collection meanwhile
only walks them.
`cockpit`'s entry point pauses the collector; a command resumes it once it is loaded (the TUI
once its first useful frame is painted), freezing what start-up made so that later collections
skip it. Measured with `benchmarks/tui_startup.py` (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import gc


def pause_collector() -> None:
    gc.disable()


def resume_collector() -> None:
    """Back to normal collection (a no-op when it never was paused)."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
