"""Containers as the node's state records them (found by name or id prefix, their state corrected
when their keeper died, removed), and ending them: `docker stop`, `docker rm`."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from cockpit_sim.tools import dockerinfo
from cockpit_sim.tools.docker.options import opt, split_options
from cockpit_sim.tools.docker.output import DockerError, err, out
from cockpit_sim.tools.nodestate import NodeState, Record, pid_alive


def no_such_container(name: str) -> DockerError:
    return DockerError(f"Error response from daemon: No such container: {name}")


def container_state(record: Record) -> Record:
    """The record's State, corrected when its keeper died without recording the exit."""
    current = dict(record["State"])
    if current.get("Running") and not pid_alive(int(current.get("Pid") or 0)):
        current.update(Status="exited", Running=False, ExitCode=137, Pid=0)
    return current


def find_container(state: NodeState, name: str) -> Record | None:
    name = name.lstrip("/")
    containers = state.containers()
    for record in containers:
        if record["Name"] == name or record["Id"] == name:
            return record
    matches = [c for c in containers if len(name) >= 1 and c["Id"].startswith(name)]
    return matches[0] if len(matches) == 1 else None


def remove_record(state: NodeState, cid: str) -> None:
    with state.locked():
        state.write("containers.json", [c for c in state.containers() if c["Id"] != cid])
    cdir = state.containers_dir / cid
    for child in cdir.glob("*"):
        child.unlink()
    if cdir.exists():
        cdir.rmdir()


def docker_root(state: NodeState) -> Path:
    """The node's Docker Root Dir: named volumes live in its `volumes/NAME/_data`."""
    return state.dir / "docker"


def has_container_toolkit(state: NodeState) -> bool:
    return not state.facts().get("faults", {}).get(dockerinfo.NO_TOOLKIT_FAULT)


def wait_stopped(state: NodeState, cid: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        record = find_container(state, cid)
        if record is None or not container_state(record).get("Running"):
            return True
        time.sleep(0.05)
    return False


def kill_container(state: NodeState, record: Record, grace: float) -> None:
    """SIGTERM to the main process, SIGKILL to all it started once `grace` seconds pass."""
    current = container_state(record)
    if not current.get("Running"):
        return
    pid = int(current["Pid"])
    if grace > 0:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        if wait_stopped(state, record["Id"], grace):
            return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    wait_stopped(state, record["Id"], 5.0)


def cmd_stop(state: NodeState, args: list[str]) -> int:
    options, names = split_options(args, {"-t", "--time", "--timeout", "-s", "--signal"}, False)
    grace = float(opt(options, "-t", "--time", "--timeout") or 10)
    status = 0
    for name in names:
        record = find_container(state, name)
        if record is None:
            err(str(no_such_container(name)))
            status = 1
            continue
        kill_container(state, record, grace)
        out(name + "\n")
    return status


def cmd_rm(state: NodeState, args: list[str]) -> int:
    options, names = split_options(args, set(), False)
    force = "-f" in options or "--force" in options
    status = 0
    for name in names:
        record = find_container(state, name)
        if record is None:
            err(f"Error: No such container: {name}")  # printed with -f too, but not an error
            status = status if force else 1
            continue
        if container_state(record).get("Running"):
            if not force:
                err(
                    "Error response from daemon: You cannot remove a running container "
                    f"{record['Id']}. Stop the container before attempting removal or force remove"
                )
                status = 1
                continue
            kill_container(state, record, 0)
        remove_record(state, record["Id"])
        out(name + "\n")
    return status
