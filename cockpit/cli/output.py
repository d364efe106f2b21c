"""stdout as the commands print it with rich: a terminal's width, or whole lines in a pipe.

rich lays a table out to 80 columns when stdout is no terminal, so `cockpit lanes | cat` cut
`mimo26-flash-mopd-2x-sparkring` to `mimo26-flash-mopd-2x-sparkri…`: a pipe or a file gets lines
as long as their content instead (up to PIPE_WIDTH), unless $COLUMNS asks for a width.
"""

from __future__ import annotations

import os
import sys

from rich.console import Console

PIPE_WIDTH = 400
"""Wide enough for any table row the commands print; rich tables are as wide as their content."""


def stdout_console() -> Console:
    """The console of a command's stdout (its width decided now, as rich decides its own)."""
    piped = not sys.stdout.isatty() and not os.environ.get("COLUMNS", "").isdigit()
    width = PIPE_WIDTH if piped else None
    return Console(highlight=False, soft_wrap=True, width=width, emoji=False)  # `:x:`: no emoji
