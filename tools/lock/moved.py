"""Which installed packages differ from requirements.lock: `python tools/lock/moved.py LOCK`.

Run by .ci/newest in the venv of the newest versions, so that a failing smoke set names the
packages that moved since the lock was made.
"""

from __future__ import annotations

import re
import sys
from importlib.metadata import distributions
from pathlib import Path

PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==([^\s;]+)")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked(text: str) -> dict[str, str]:
    return {canonical(m[1]): m[2] for line in text.splitlines() if (m := PIN.match(line))}


def moved(lock: dict[str, str], installed: dict[str, str]) -> list[str]:
    """One line per package whose installed version is not the locked one (or is not locked)."""
    lines = []
    for name in sorted(installed):
        was = lock.get(name)
        if was != installed[name] and not name.startswith("cockpit"):
            lines.append(f"{name}: {was or 'not in the lock'} -> {installed[name]}")
    return lines


def main() -> int:
    lock = locked(Path(sys.argv[1]).read_text())
    installed = {canonical(d.metadata["Name"]): d.version for d in distributions()}
    for line in moved(lock, installed):
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
