"""What `cockpit --version` says: the version and the commit it was built from.

A wheel carries the commit in `cockpit/COMMIT`, written by the build (setup.py); an editable
install from a checkout reads it from git. Only `--version` pays for this.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
COMMIT_FILE = PACKAGE / "COMMIT"


def checkout_commit(root: Path) -> str | None:
    """The short commit of the git checkout at `root` (with `-dirty` for uncommitted changes)."""
    if not (root / ".git").exists():
        return None
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "describe", "--always", "--dirty", "--abbrev=12"],
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def commit() -> str:
    if COMMIT_FILE.is_file():
        return COMMIT_FILE.read_text().strip() or "unknown"
    return checkout_commit(PACKAGE.parent) or "unknown"


def version_line() -> str:
    from cockpit import __version__

    return f"cockpit, version {__version__} (commit {commit()})"
