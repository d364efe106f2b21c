"""Run the real `cockpit` CLI in a subprocess, as an operator would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_cockpit(*args: str | Path, env: dict[str, str] | None = None, timeout: float = 60):
    """`python -m cockpit ARGS`; returns the CompletedProcess (text mode)."""
    full_env = {**os.environ, "COLUMNS": "200", **(env or {})}
    full_env.pop(
        "COCKPIT_INVENTORY", None
    ) if env is None or "COCKPIT_INVENTORY" not in env else None
    return subprocess.run(
        [sys.executable, "-m", "cockpit", *map(str, args)],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
    )
