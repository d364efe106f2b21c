"""Run a node session's command inside the node's namespaces (its identity: see
`cockpit_sim.fleet.identity`), for both kinds of SSH server.

The fleet daemon keeps one holder process per node in that node's mount and UTS namespaces and
writes `<node dir>/identity/enter`: the `nsenter` words (one per line) that join them. A session
then runs `nsenter … --wd=HOME -- bash -c CMD`: nsenter execs bash in the same process, so the
session's process group, signals and exit status stay what they were. Without the file (a fleet
in wrappers-only mode), or when its holder is not that node's (gone, pid reused), the command
runs as it is.

Standard library only: `node-exec` pays this module's start-up on every OpenSSH session.
"""

from __future__ import annotations

import os


def enter_words(node_dir: str) -> list[str]:
    """The nsenter prefix of the node, [] when its namespaces are not there."""
    try:
        with open(os.path.join(node_dir, "identity", "enter")) as handle:
            words = handle.read().split("\n")
    except OSError:
        return []
    words = [w for w in words if w]
    target = next((w.partition("=")[2] for w in words if w.startswith("--target=")), "")
    try:
        with open(f"/proc/{target}/environ", "rb") as handle:
            environ = handle.read().split(b"\0")
    except OSError:
        return []
    if f"COCKPIT_SIM_NODE_DIR={node_dir}".encode() not in environ:
        return []
    return words


def session_argv(node_dir: str, argv: list[str], cwd: str) -> list[str]:
    """`argv` as it must run to see the node's identity, starting in `cwd`."""
    words = enter_words(node_dir)
    return [*words, f"--wd={cwd}", "--", *argv] if words else list(argv)
