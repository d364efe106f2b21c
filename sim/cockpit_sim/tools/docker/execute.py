"""`docker exec`: a command in a running container's environment, ended with the container."""

from __future__ import annotations

import os
from pathlib import Path

from cockpit_sim.tools.docker.containers import container_state, find_container
from cockpit_sim.tools.docker.options import key_values, opt, opts, split_options
from cockpit_sim.tools.docker.output import DockerError, out
from cockpit_sim.tools.nodestate import NodeState
from cockpit_sim.tools.supervisor import EXEC_PIDS

EXEC_VALUE_FLAGS = {"-e", "--env", "-w", "--workdir", "-u", "--user", "--env-file"}


def cmd_exec(state: NodeState, args: list[str]) -> int:
    """Run a command in a running container: its environment and working directory, the
    node's filesystem (a simulated container has none of its own); `-d` leaves it running."""
    options, positionals = split_options(args, EXEC_VALUE_FLAGS, True)
    if len(positionals) < 2:
        raise DockerError(
            "\"docker exec\" requires at least 2 arguments.\nSee 'docker exec --help'.\n\n"
            "Usage:  docker exec [OPTIONS] CONTAINER COMMAND [ARG...]\n\n"
            "Run a command in a running container"
        )
    name, command = positionals[0], positionals[1:]
    record = find_container(state, name)
    if record is None:
        raise DockerError(f"Error: No such container: {name}")
    if not container_state(record).get("Running"):
        raise DockerError(f"Error response from daemon: Container {record['Id']} is not running")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SSH_")}
    env.update(key_values(record["Config"]["Env"] or []))
    env.update(key_values(opts(options, "-e", "--env")))
    workdir = opt(options, "-w", "--workdir") or record["Config"].get("WorkingDir") or ""
    cwd = workdir if workdir and Path(workdir).is_dir() else str(Path.home())
    import subprocess

    detach = "-d" in options or "--detach" in options
    try:
        proc = subprocess.Popen(
            command,
            env=env,
            cwd=cwd,
            stdin=None if "-i" in options else subprocess.DEVNULL,
            stdout=subprocess.DEVNULL if detach else None,
            stderr=subprocess.DEVNULL if detach else None,
            start_new_session=detach,
        )
    except OSError:
        out(
            "OCI runtime exec failed: exec failed: unable to start container process: exec: "
            f'"{command[0]}": executable file not found in $PATH: unknown\r\n'  # sic
        )
        return 126
    record_exec(state, record["Id"], proc.pid)
    return 0 if detach else proc.wait()


def record_exec(state: NodeState, cid: str, pid: int) -> None:
    """Note an exec'd process, so that it ends with the container (see supervisor.end_execs)."""
    with open(state.containers_dir / cid / EXEC_PIDS, "a") as handle:
        handle.write(f"{pid}\n")
