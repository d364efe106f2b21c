"""mkdocs hooks: the reference tables and the TUI screenshots come from the code and the test suite
at build time, so the manual shows what the code does today (nothing generated is committed)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files
from reference_pages import GENERATED

SNAPSHOTS = Path(__file__).resolve().parents[1] / "tests/tui/__snapshots__/test_snapshots"
SCREENS = {
    "main-dark": "test_main_screen[cockpit-dark-160x48].svg",
    "main-80x24": "test_main_screen[cockpit-dark-80x24].svg",
    "confirmation": "test_confirmation_shows_the_plan.svg",
    "help": "test_help_screen_lists_the_keys.svg",
    "bench-plan": "test_bench_plan_editor.svg",
    "engine-maximised": "test_the_engine_pane_maximised_on_a_real_engine.svg",
}
"""The snapshot tests' SVGs (tests/tui/test_snapshots.py asserts each is what the code draws)
published as `assets/screens/NAME.svg`."""
MARKER = re.compile(r"^<!-- reference: ([a-z-]+) -->$", re.M)


def on_config(config: Any) -> Any:
    """The command reference lists `sim` and `demo` only when the simulator is installed."""
    if importlib.util.find_spec("cockpit_sim") is None:
        raise PluginError("the manual documents `cockpit sim`: pip install -e ./sim first")
    return config


def on_files(files: Files, config: Any) -> Files:
    for name, snapshot in SCREENS.items():
        source = SNAPSHOTS / snapshot
        if not source.is_file():
            raise PluginError(f"{source}: no such snapshot (renamed? update docs/hooks.py)")
        files.append(File.generated(config, f"assets/screens/{name}.svg", abs_src_path=str(source)))
    return files


def _generated(match: re.Match[str]) -> str:
    name = match.group(1)
    if name not in GENERATED:
        raise PluginError(f"<!-- reference: {name} -->: no such table ({', '.join(GENERATED)})")
    return GENERATED[name]()


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    return MARKER.sub(_generated, markdown)
