"""Where the shipped recipes and themes live: the source tree, or `share/cockpit` of an install.

They are top-level folders operators read, edit and diff (`recipes/`, `themes/`). A wheel carries
them as data files under `<prefix>/share/cockpit/`, so a non-editable install (pipx, a plain
`pip install .`) finds them there; a checkout or editable install reads the tree itself.
"""

from __future__ import annotations

import sys
from pathlib import Path

SOURCE_ROOT = Path(__file__).resolve().parents[1]


def asset_dir(name: str, source_root: Path = SOURCE_ROOT, prefix: str = sys.prefix) -> Path:
    """The folder `name` (recipes, themes) of this checkout, else of the installed data files."""
    if (source_root / "pyproject.toml").is_file() and (source_root / name).is_dir():
        return source_root / name
    return Path(prefix) / "share" / "cockpit" / name
