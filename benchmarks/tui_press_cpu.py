"""What a key costs the TUI itself: CPU and layouts per press, in-process, on the recorded scene.

    python benchmarks/tui_press_cpu.py [--presses 20] [--write-results]

`tui_keys.py` measures key→frame in a real terminal, where tmux, the fleet and the load share the
cores; this isolates the app: the tests' recorded scene (8 nodes, a MiMo lane serving, a bench
table) at 160×48 under `App.run_test`, no fleet, no terminal. For `m` (maximise / restore the
focused Lanes pane, alternately) and `?` (help open / closed): the process's CPU time over the
presses less its idle rate measured just before, and the screen layouts (`Screen._refresh_layout`)
per press. Noisy machines move the CPU figure; the layout count is exact.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from textual.screen import Screen  # noqa: E402

from benchmarks.results_md import write_section  # noqa: E402
from cockpit.tui.app import CockpitApp  # noqa: E402
from cockpit.tui.settings import TuiSettings  # noqa: E402
from tests.tui import scene  # noqa: E402

SIZE = (160, 48)
IDLE_S = 5.0
BETWEEN_S = 0.4


async def measure(presses: int) -> dict[str, tuple[float, float]]:
    """key → (CPU ms a press, layouts a press)."""
    layouts = 0
    refresh_layout = Screen._refresh_layout

    def counting(screen: Screen, *args: object, **kwargs: object) -> None:
        nonlocal layouts
        layouts += 1
        refresh_layout(screen, *args, **kwargs)  # type: ignore[arg-type]

    Screen._refresh_layout = counting  # type: ignore[method-assign]
    inventory = scene.inventory()
    settings = TuiSettings(Path(tempfile.mkdtemp()) / "tui.toml", None, {})
    app = CockpitApp(inventory, settings=settings, baselines=scene.baselines(),
                     clock=lambda: scene.T0, fleet_label="recorded scene")  # fmt: skip
    app.store.apply_all(scene.scene(inventory))
    out = {}
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(1.0)
        c0 = time.process_time()
        await pilot.pause(IDLE_S)
        idle = (time.process_time() - c0) / IDLE_S
        for key in ("m", "question_mark"):
            layouts, c0, t0 = 0, time.process_time(), time.perf_counter()
            for _ in range(presses):
                await pilot.press(key)
                await pilot.pause(BETWEEN_S)
            cpu = time.process_time() - c0 - idle * (time.perf_counter() - t0)
            out[key] = (1000 * cpu / presses, layouts / presses)
            if app.screen is not app.screen_stack[0]:
                await pilot.press(key)  # an odd count left the help open
                await pilot.pause(BETWEEN_S)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presses", type=int, default=20)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    figures = asyncio.run(measure(args.presses))
    rows = [
        f"`python benchmarks/tui_press_cpu.py --presses {args.presses}` ({date.today()})",
        "",
        f"The recorded scene at {SIZE[0]}×{SIZE[1]} in-process (`App.run_test`), no fleet and no "
        "terminal: the app's own cost of a key.",
        "",
        "| key | CPU ms a press | layouts a press |",
        "|---|---:|---:|",
        *(
            f"| `{'?' if key == 'question_mark' else key}` | {cpu:.0f} | {n:.1f} |"
            for key, (cpu, n) in figures.items()
        ),
    ]
    text = "## TUI: what a key costs the app\n\n" + "\n".join(rows)
    print(text)
    if args.write_results:
        write_section("tui_press_cpu", text)


if __name__ == "__main__":
    main()
