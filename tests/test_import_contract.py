"""The package's import contract, checked on the import graph of the source (every `import`,
at module level or inside a function): the simulator (`cockpit_sim`, a distribution of its own in
sim/) stays behind the SSH boundary, the pure layers import no I/O, and nothing below the TUI
imports it."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "cockpit"
SIMULATOR = "cockpit_sim"
IO_LIBRARIES = ("asyncssh", "httpx", "aiohttp", "textual", "subprocess", "socket")


def modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


GRAPH = {name: imports(path) for name, path in modules()}


def under(name: str, *packages: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def reach(name: str) -> set[str]:
    """Everything `name` imports, through the cockpit's own modules (transitively)."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        for found in GRAPH.get(todo.pop(), ()):
            if found not in seen:
                seen.add(found)
                if found in GRAPH:
                    todo.append(found)
    return seen


def offenders(importers: tuple[str, ...], forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    """Modules of `importers` that reach a `forbidden` one, directly or through the cockpit."""
    found = {name: reach(name) for name in GRAPH if under(name, *importers)}
    return {
        name: sorted(i for i in imported if under(i, *forbidden))
        for name, imported in found.items()
        if any(under(i, *forbidden) for i in imported)
    }


def test_the_graph_is_read() -> None:
    assert len(GRAPH) > 100 and "cockpit.tui.app" in GRAPH
    assert offenders(("cockpit.tui.widgets",), ("textual",))  # the check can find something
    assert any(under(i, SIMULATOR) for i in GRAPH["cockpit.cli.sim_cmds"])


def test_only_the_sim_and_demo_command_reaches_the_simulator() -> None:
    """Directly or through the cockpit's own modules: the product's other modules run without
    the simulator installed (`cockpit.cli.main` loads the command module by name)."""
    assert set(offenders(("cockpit",), (SIMULATOR,))) == {"cockpit.cli.sim_cmds"}


@pytest.mark.parametrize("layer", ["cockpit.config", "cockpit.plan"])
def test_config_and_plan_import_no_io(layer: str) -> None:
    assert offenders((layer,), (*IO_LIBRARIES, "cockpit.ssh", "cockpit.ops", "cockpit.tui")) == {}


@pytest.mark.parametrize(
    "layer",
    [
        "cockpit.ops",
        "cockpit.bench",
        "cockpit.telemetry",
        "cockpit.status",
        "cockpit.ssh",
        "cockpit.history",
    ],
)
def test_the_layers_below_the_tui_import_no_tui(layer: str) -> None:
    assert offenders((layer,), ("cockpit.tui", "textual")) == {}


def test_the_headless_users_of_the_tuis_state_import_no_textual() -> None:
    """The exporter runs the TUI's store and fleet feed without a terminal: those stay free of
    Textual, and so does what they import from the cockpit."""
    headless = ("cockpit.tui.state", "cockpit.tui.feeds", "cockpit.exporter")
    assert offenders(headless, ("textual",)) == {}


def test_the_event_vocabulary_is_neutral_and_the_bench_needs_no_operation() -> None:
    """`cockpit.events` (what operations and the bench yield, what the CLI and the TUI read)
    imports no layer above it, and the bench reaches no operation module through it."""
    assert offenders(("cockpit.events",), (*IO_LIBRARIES, "cockpit.ops", "cockpit.tui")) == {}
    assert offenders(("cockpit.bench",), ("cockpit.ops",)) == {}
