"""The simulated `docker` CLI of one node: images and containers recorded in the node's state dir.

Output, error messages and exit codes follow Debian's docker.io 20.10.24, the real daemon that
`tests/sim_fleet/test_docker_contract.py` compares this simulator with (that test lists, and pins,
what the simulator still does not do). The seed's trap included: an image loaded from `docker save`
has no RepoDigests, so `docker run repo@sha256:...` asks the registry for the digest: the daemon
re-attaches it silently when the registry answers (the layers are local) and the run fails with
exit 125 when the registry is down (`cockpit sim registry down`), as a real daemon does.

The commands live in this package by family (see each module); this module dispatches.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

from cockpit_sim.tools import dockerinfo
from cockpit_sim.tools.docker.containers import cmd_rm, cmd_stop
from cockpit_sim.tools.docker.execute import cmd_exec
from cockpit_sim.tools.docker.images import cmd_images, cmd_inspect, cmd_rmi, cmd_tag
from cockpit_sim.tools.docker.logs import cmd_logs
from cockpit_sim.tools.docker.output import DockerError, err, out
from cockpit_sim.tools.docker.ps import cmd_ps
from cockpit_sim.tools.docker.registry import cmd_pull
from cockpit_sim.tools.docker.run import cmd_run
from cockpit_sim.tools.docker.stats import cmd_stats
from cockpit_sim.tools.docker.system import cmd_info, cmd_version
from cockpit_sim.tools.docker.transfer import cmd_load, cmd_save
from cockpit_sim.tools.nodestate import NodeState

Command = Callable[[NodeState, list[str]], int]
INSPECT_ANY: Command = partial(cmd_inspect, kind="any")
INSPECT_CONTAINER: Command = partial(cmd_inspect, kind="container")
INSPECT_IMAGE: Command = partial(cmd_inspect, kind="image")
COMMANDS: dict[str, Command] = {
    "ps": cmd_ps,
    "run": cmd_run,
    "stop": cmd_stop,
    "rm": cmd_rm,
    "logs": cmd_logs,
    "images": cmd_images,
    "inspect": INSPECT_ANY,
    "save": cmd_save,
    "load": cmd_load,
    "pull": cmd_pull,
    "tag": cmd_tag,
    "rmi": cmd_rmi,
    "info": cmd_info,
    "version": cmd_version,
    "stats": cmd_stats,
    "exec": cmd_exec,
}
GROUPS: dict[tuple[str, str], Command] = {
    ("container", "ls"): cmd_ps,
    ("container", "ps"): cmd_ps,
    ("container", "list"): cmd_ps,
    ("container", "run"): cmd_run,
    ("container", "stop"): cmd_stop,
    ("container", "rm"): cmd_rm,
    ("container", "logs"): cmd_logs,
    ("container", "inspect"): INSPECT_CONTAINER,
    ("container", "stats"): cmd_stats,
    ("container", "exec"): cmd_exec,
    ("system", "info"): cmd_info,
    ("image", "ls"): cmd_images,
    ("image", "list"): cmd_images,
    ("image", "inspect"): INSPECT_IMAGE,
    ("image", "save"): cmd_save,
    ("image", "load"): cmd_load,
    ("image", "pull"): cmd_pull,
    ("image", "tag"): cmd_tag,
    ("image", "rm"): cmd_rmi,
}

VERSION_FLAGS = ("--version", "-v")
QUICK: frozenset[Command] = frozenset(
    {cmd_ps, cmd_images, cmd_info, cmd_version, INSPECT_ANY, INSPECT_CONTAINER, INSPECT_IMAGE}
)
"""The listings and inspections, however they are spelled (`ps`, `container ls`, …)."""


def resolve(args: list[str]) -> tuple[Command | None, list[str]]:
    """The command `args` name (a group's two words first) and its own arguments."""
    if len(args) >= 2 and (args[0], args[1]) in GROUPS:
        return GROUPS[(args[0], args[1])], args[2:]
    return (COMMANDS.get(args[0]) if args else None), args[1:]


def quick(args: list[str]) -> bool:
    """The listings and inspections: they only read the node's state files, so the tool service
    answers them without a fork (`cockpit_sim.tools.service.Quick`)."""
    return bool(args) and (args[0] in VERSION_FLAGS or resolve(args)[0] in QUICK)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    node_dir = os.environ.get("COCKPIT_SIM_NODE_DIR")
    if not node_dir:
        err("docker: COCKPIT_SIM_NODE_DIR is not set (not on a simulated node)")
        return 1
    state = NodeState(Path(node_dir))
    if not args:
        err("Usage:  docker [OPTIONS] COMMAND")
        return 0
    if args[0] in VERSION_FLAGS:
        version = dockerinfo.SERVER_VERSION
        out(f"Docker version {version}, build {dockerinfo.CLIENT_COMMIT}\n")
        return 0
    command, rest = resolve(args)
    if command is None:
        err(f"docker: '{args[0]}' is not a docker command.\nSee 'docker --help'")
        return 1
    try:
        return command(state, rest)
    except DockerError as exc:
        err(str(exc))
        return exc.status
    except BrokenPipeError:
        return 1
    except KeyboardInterrupt:
        return 130
