"""The manual (mkdocs.yml, docs/) and the README.

The site builds with `mkdocs build --strict` (no broken link, no page out of the nav); its command
reference lists every command and option that `cockpit … --help` shows, and no other command; the
reference pages generated from the code hold every key, metric, schema field and advisor rule;
the TUI screenshots are the snapshot tests' SVGs; the README stays within two screens and holds
the two set-up commands CI runs. mkdocs missing is a failure, not a skip: install `.[docs]`.
"""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest
from click.testing import CliRunner

from cockpit.cli.main import cli
from cockpit.config.models import ClustersFile, Recipe
from cockpit.tui import keymap
from cockpit.tui.state import advisor

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SNAPSHOTS = ROOT / "tests/tui/__snapshots__/test_snapshots"
DEMO = (
    "python3 -m venv .venv && .venv/bin/pip install -c requirements.lock -e . -e ./sim && "
    ".venv/bin/cockpit demo"
)
TESTS = (
    "apt-get install -y openssh-server docker.io docker-registry busybox-static prometheus tmux "
    "chromium gcc libc6-dev && python3 -m venv .venv && .venv/bin/pip install -q -c "
    "requirements.lock -e '.[test,bench,docs]' -e ./sim && .venv/bin/pytest -q -n 4 --dist loadfile "
    "-m 'not timing' && .venv/bin/pytest -q -m timing"
)
OPTION = re.compile(r"(?<![\w-])--?[A-Za-z0-9][\w-]*")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The manual built as CI builds it, once for this file's tests."""
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, f"mkdocs build --strict failed:\n{built.stderr[-4000:]}"
    return out


def _text(page: Path) -> str:
    """A built page's text, tags stripped."""
    return html.unescape(re.sub(r"<[^>]+>", " ", page.read_text()))


def _entries(help_text: str, section: str) -> list[str]:
    """The first column of a `--help` section (`Options:`, `Commands:`): its rows start at two
    spaces, their wrapped help further in."""
    _, found, rest = help_text.partition(f"\n{section}:\n")
    if not found:
        return []
    rows = rest.split("\n\n", 1)[0].splitlines()
    return [re.split(r"\s{2,}", row.strip())[0] for row in rows if re.match(r"  \S", row)]


def _help_tree() -> dict[tuple[str, ...], set[str]]:
    """Every command path `cockpit … --help` lists, with the options its `--help` shows."""
    tree: dict[tuple[str, ...], set[str]] = {}
    todo: list[tuple[str, ...]] = [()]
    while todo:
        path = todo.pop()
        shown = CliRunner().invoke(cli, [*path, "--help"], prog_name="cockpit", terminal_width=200)
        assert shown.exit_code == 0, shown.output
        tree[path] = {
            name for row in _entries(shown.output, "Options") for name in OPTION.findall(row)
        }
        todo += [(*path, row.split()[0]) for row in _entries(shown.output, "Commands")]
    return tree


def test_the_manual_builds_strictly(site: Path) -> None:
    assert (site / "index.html").is_file()
    assert (site / "reference/cli/index.html").is_file()


def test_the_command_reference_lists_every_command_and_option_help_shows(site: Path) -> None:
    page = (site / "reference/cli/index.html").read_text()
    tree = _help_tree()
    assert len(tree) > 30 and ("sim", "up") in tree and tree[("launch",)] >= {"--recipe", "-r"}
    headings = dict(re.findall(r'<h[2-6] id="(cockpit[\w-]*)"[^>]*>(.*?)</h[2-6]>', page, re.S))
    assert set(headings) == {"-".join(("cockpit", *path)) for path in tree}
    sections = re.split(r"(?=<h[1-6][ >])", page)
    for path, options in tree.items():
        anchor = f'id="{"-".join(("cockpit", *path))}"'
        section = html.unescape(re.sub(r"<[^>]+>", " ", next(s for s in sections if anchor in s)))
        listed = set(OPTION.findall(section.partition("Options:")[2]))
        assert options <= listed, f"cockpit {' '.join(path)}: not in the manual: {options - listed}"


def test_the_generated_reference_holds_every_key_metric_field_and_rule(site: Path) -> None:
    keys = _text(site / "reference/keys/index.html")
    for binding in (*keymap.MAIN_BINDINGS, *keymap.TAIL_BINDINGS):
        assert f" {binding.id} " in keys, binding.id
    metrics = _text(site / "reference/metrics/index.html")
    for name in ("cockpit_node_up", "cockpit_lane_state", "cockpit_lane_preemptions_total"):
        assert f" {name} " in metrics, name
    schema = _text(site / "reference/schema/index.html")
    for model in (Recipe, ClustersFile):
        for table in model.model_fields.values():
            sub = table.annotation
            sub = getattr(sub, "__args__", (sub,))[-1]  # dict[Name, Node] and list[Deviation] too
            for field in getattr(sub, "model_fields", {}):  # `[image.versions]` for a table
                assert re.search(rf"[ .]{field}[ \]]", schema), field
    rules = _text(site / "reference/advisor/index.html")
    for rule in ("kv_preemption", "output_truncation", "queue_backlog", "gpu_thermal"):
        assert f" {rule} " in rules, rule
    assert f" {advisor.GPU_HOT_C:g} " in rules


def test_the_tui_screenshots_are_the_snapshot_tests_svgs(site: Path) -> None:
    for page in ("guides/tui/index.html", "index.html"):
        shown = re.findall(r'<img [^>]*src="([^"]+\.svg)"', (site / page).read_text())
        assert shown, page
        if page.startswith("guides"):
            assert len(set(shown)) >= 3
    published = sorted((site / "assets/screens").glob("*.svg"))
    assert len(published) >= 3
    snapshots = {p.read_bytes() for p in SNAPSHOTS.glob("*.svg")}
    assert all(p.read_bytes() in snapshots for p in published)


def test_the_readme_fits_two_screens_and_holds_the_set_up_commands() -> None:
    text = README.read_text()
    assert len(text.encode()) <= 10_000
    blocks = re.findall(r"^```bash\n(.*?)\n```$", text, re.S | re.M)
    assert DEMO in blocks and TESTS in blocks
    ci = (ROOT / ".ci/run").read_text()
    # CI runs the README's test command, and fails when it fails (more lines follow it)
    assert f"{TESTS.partition(' && ')[2]} || exit 1" in ci.splitlines()
    for link in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
        assert (ROOT / unquote(link)).exists(), link
