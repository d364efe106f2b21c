"""Whether a process id exists on this host: shared by the lock's stale rule and the sim tools.

Kept to the standard library's `os` so the simulated tools, run once per command, start fast.
"""

from __future__ import annotations

import os


def pid_exists(pid: int) -> bool:
    """True while a process with this id exists (one we may not signal counts too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
