"""The smoke set: what a new user does first, and nothing printed that the cockpit did not write.

Run by `tests/test_smoke.py` on the locked install and by `.ci/newest` on the newest versions the
dependency ranges allow (`python tests/smoke.py COCKPIT_EXECUTABLE`): every command's `--help`,
`--version`, `validate`, a refusal, a mistyped command, then `sim up` + `status` + `launch` +
one bench point + `stop` + `sim down` on a two-node simulated fleet. Each step's output is held
to the cockpit's own lines: no warning, no traceback, no line that names a Python file.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

LANE, CLUSTER = "qwen3-0.6b-2x", "2nodes-dac"
BENCH_ONE_POINT = (
    *("bench", "--recipe", LANE, "--cluster", CLUSTER, "--label", "smoke", "--depths", "0"),
    *("--concurrency", "1", "--runs", "1", "--reports"),
)
FOREIGN = re.compile(
    r"Warning\b|warnings\.warn|Traceback \(most recent call last\)|site-packages|\.py:\d+|"
    r"^\s+File \"",
    re.MULTILINE,
)
"""What only a dependency or the interpreter prints: a warning (`x.py:12: FooWarning: …`), a
traceback, a path into the installed packages."""


@dataclass(frozen=True)
class Step:
    args: tuple[str, ...]
    code: int
    output: str

    def problem(self, expect: int) -> str | None:
        """Why this step failed the smoke set, or None."""
        said = f"cockpit {' '.join(self.args)}"
        if self.code != expect:
            return f"{said}: exit {self.code}, expected {expect}:\n{self.output}"
        foreign = FOREIGN.search(self.output)
        if foreign:
            return (
                f"{said}: a line the cockpit did not write ({foreign.group(0)!r}):\n{self.output}"
            )
        return None


def run(cockpit: str, *args: str, env: dict[str, str], timeout: float = 240) -> Step:
    """`cockpit ARGS` as a user runs it: stdout and stderr as one stream (`2>&1`)."""
    done = subprocess.run(
        [cockpit, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    return Step(tuple(args), done.returncode, done.stdout)


def user_env(home: Path) -> dict[str, str]:
    """A user's environment: their own home and state, no warning options of a developer's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "COCKPIT_"))}
    env.update(HOME=str(home), COLUMNS="120", COCKPIT_STATE_DIR=str(home / "state"))
    env.pop("XDG_RUNTIME_DIR", None)
    return env


def command_paths(cockpit: str) -> list[tuple[str, ...]]:
    """Every command and subcommand, from the click tree of the install being smoked."""
    python = Path(cockpit).with_name("python")
    listing = subprocess.run(
        [
            str(python),
            "-c",
            "import click; from cockpit.cli.main import cli\n"
            "ctx = click.Context(cli)\n"
            "def walk(group, path):\n"
            "    for name in group.list_commands(ctx):\n"
            "        cmd = group.get_command(ctx, name)\n"
            "        print(' '.join((*path, name)))\n"
            "        if isinstance(cmd, click.Group): walk(cmd, (*path, name))\n"
            "walk(cli, ())",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return [tuple(line.split()) for line in listing.stdout.splitlines() if line.strip()]


def smoke(cockpit: str, work: Path, *, every_help: bool = True) -> Iterator[str]:
    """Run the smoke set; yield each problem found (nothing when all is well). `every_help`: each
    command's `--help` too (a process each; the suite checks them in-process elsewhere)."""
    env = user_env(work / "home")
    fleet = work / "fleet"
    steps: list[tuple[Step, int]] = [(run(cockpit, "--help", env=env), 0)]
    steps += [(run(cockpit, "--version", env=env), 0)]
    if every_help:
        steps += [(run(cockpit, *p, "--help", env=env), 0) for p in command_paths(cockpit)]
    steps += [
        (run(cockpit, "validate", env=env), 0),
        (run(cockpit, "launch", "-r", "no-such-recipe", "-c", CLUSTER, env=env), 2),
        (run(cockpit, "statsu", env=env), 2),
        (
            run(
                cockpit, "sim", "up", "--nodes", "2", "--dir", str(fleet), "--speed", "50", env=env
            ),
            0,
        ),
    ]
    yield from (p for step, expect in steps if (p := step.problem(expect)))
    inventory = ("--inventory", str(fleet))
    try:
        steps = [
            (run(cockpit, *inventory, "status", env=env), 0),
            (run(cockpit, *inventory, "launch", "-r", LANE, "-c", CLUSTER, env=env), 0),
            (run(cockpit, *inventory, *BENCH_ONE_POINT, str(work / "reports"), env=env), 0),
            (run(cockpit, *inventory, "stop", "--lane", LANE, env=env), 0),
        ]
        yield from (p for step, expect in steps if (p := step.problem(expect)))
    finally:
        down = run(cockpit, "sim", "down", "--dir", str(fleet), env=env)
    if problem := down.problem(0):
        yield problem


def main() -> int:
    cockpit = sys.argv[1] if len(sys.argv) > 1 else str(Path(sys.executable).with_name("cockpit"))
    with tempfile.TemporaryDirectory(prefix="cockpit-smoke-") as work:
        problems = list(smoke(cockpit, Path(work)))
    for problem in problems:
        print(f"smoke: {problem}", file=sys.stderr)
    print(f"smoke: {'passed' if not problems else f'{len(problems)} problem(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
