"""Shell completion: the scripts, and lane, recipe and cluster names from the inventory."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_runner import run_cockpit


def complete(words: str, *, inventory: Path | None = None) -> list[str]:
    """What bash's completion gets for the last word of `words` (click's protocol)."""
    env = {"_COCKPIT_COMPLETE": "bash_complete", "COMP_WORDS": words,
           "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1))}  # fmt: skip
    if inventory is not None:
        env["COCKPIT_INVENTORY"] = str(inventory)
    done = run_cockpit(env=env)
    assert done.returncode == 0, done.stderr
    return [line.split(",", 1)[1] for line in done.stdout.splitlines() if line]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_each_shells_script_names_the_completion_variable(shell: str) -> None:
    done = run_cockpit("completion", shell)
    assert done.returncode == 0 and "_COCKPIT_COMPLETE" in done.stdout


def test_an_unknown_shell_is_refused() -> None:
    done = run_cockpit("completion", "tcsh")
    assert done.returncode == 2 and "tcsh" in done.stderr


def test_recipes_lanes_and_clusters_complete_from_the_inventory() -> None:
    assert complete("cockpit launch --recipe qw") == ["qwen3-0.6b-2x"]
    assert "2nodes-dac" in complete("cockpit launch --recipe qwen3-0.6b-2x --cluster ")
    assert complete("cockpit logs --lane mimo26-pro") == ["mimo26-pro-mopd-8x-sparkring"]
    assert "sync-model" in complete("cockpit sy")  # the commands, by click


def test_a_broken_inventory_completes_nothing_and_prints_no_error(tmp_path: Path) -> None:
    (tmp_path / "clusters.toml").write_text("[broken\n")
    assert complete("cockpit launch --recipe ", inventory=tmp_path) == []
