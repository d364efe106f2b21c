"""`docker run`: the container's record, mounts, environment and main process, then its keeper
(`supervisor.supervise`) forked; attached, its log streamed until it exits."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

from cockpit_sim.tools import dockerinspect
from cockpit_sim.tools.docker.containers import docker_root, has_container_toolkit, remove_record
from cockpit_sim.tools.docker.logs import emit_log, read_log_lines
from cockpit_sim.tools.docker.options import (
    RUN_VALUE_FLAGS,
    env_files,
    key_values,
    opt,
    opts,
    split_options,
)
from cockpit_sim.tools.docker.output import DockerError, err, out
from cockpit_sim.tools.docker.registry import RegistryError, pull
from cockpit_sim.tools.launchers import pythonpath
from cockpit_sim.tools.nodestate import NodeState, Record, find_image
from cockpit_sim.tools.supervisor import now_iso, supervise


def container_env(state: NodeState, record: Record, image: Record) -> dict[str, str]:
    """The main process's environment: the node's, the image's, `-e`, and the simulator's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SSH_")}
    env.update(key_values(image["Config"].get("Env") or []))
    given = key_values(record["Config"]["Env"] or [])
    if not image.get("SimEngine"):  # a real program: `-e HOME=/mounted/dir` names the mount
        given = dict(zip(given, host_paths(list(given.values()), record["Mounts"]), strict=True))
    env.update(given)
    env.update(
        COCKPIT_SIM_CONTAINER=record["Name"],
        COCKPIT_SIM_CONTAINER_ID=record["Id"],
        COCKPIT_SIM_MOUNTS=json.dumps(
            [{"source": m["Source"], "destination": m["Destination"]} for m in record["Mounts"]]
        ),
        COCKPIT_SIM_IMAGE=image["Id"],
        PYTHONPATH=pythonpath(env.get("PYTHONPATH")),
    )
    env["PATH"] = os.environ.get("PATH", "/usr/bin:/bin")
    return env


def host_paths(words: list[str], mounts: list[dict[str, str]]) -> list[str]:
    """Container paths in the engine's arguments rewritten to the mounted host paths.

    A simulated container has no filesystem of its own, so `/root/.cache/huggingface/hub/...`
    (a `-v` destination) must read as the node's cache folder, also inside JSON values."""
    rewritten = []
    for word in words:
        for mount in sorted(mounts, key=lambda m: -len(m["Destination"])):
            dest = mount["Destination"].rstrip("/")
            word = re.sub(re.escape(dest) + r"(?=/|$|\"|')", mount["Source"].rstrip("/"), word)
        rewritten.append(word)
    return rewritten


def main_argv(
    image: Record, entrypoint: str | None, command: list[str], mounts: list[dict[str, str]]
) -> list[str]:
    """The engine for images whose entrypoint is the vLLM launcher, else the entrypoint and
    command themselves (exec'd, as runc execs them: no shell in between)."""
    if image.get("SimEngine") and not entrypoint:
        # An ENTRYPOINT `vllm serve` puts the subcommand in the image, not in the command line.
        serve = ["serve"] if (image["Config"].get("Entrypoint") or [])[-1:] == ["serve"] else []
        return [sys.executable, "-m", "cockpit_sim.engine", *serve, *host_paths(command, mounts)]
    words = [entrypoint] if entrypoint else list(image["Config"].get("Entrypoint") or [])
    words += command
    if not words:
        raise DockerError(
            "docker: Error response from daemon: no command specified.\nSee 'docker run --help'.",
            125,
        )
    # the command reads its bind mounts where the container sees them (a real program, e.g.
    # vLLM's CPU build serving the model cache): on the node those are the mounts' sources
    return host_paths(words, mounts)


def run_usage_error(message: str) -> DockerError:
    return DockerError(f"{message}\nSee 'docker run --help'.", 125)


def daemon_run_error(message: str) -> DockerError:
    return DockerError(
        f"docker: Error response from daemon: {message}.\nSee 'docker run --help'.", 125
    )


def run_options(options: dict[str, list[str]], cid: str, volumes_dir: Path) -> tuple[Record, list]:
    """HostConfig and Mounts of a `docker run`, shaped as the daemon records them."""
    specs = opts(options, "-v", "--volume")
    try:
        mounts = [
            dockerinspect.mount(v, str(volumes_dir), dockerinspect.derived_hex("volume", cid, v))
            for v in specs
        ]
        gpus = opt(options, "--gpus")
        restart = opt(options, "--restart") or "no"
        host = dockerinspect.host_config(
            Binds=[v for v in specs if ":" in v] or None,  # anonymous volumes are no binds
            NetworkMode=opt(options, "--network", "--net") or "default",
            IpcMode=opt(options, "--ipc") or "private",
            ShmSize=dockerinspect.ram_in_bytes(opt(options, "--shm-size") or "64m"),
            Ulimits=[dockerinspect.ulimit(u) for u in opts(options, "--ulimit")] or None,
            DeviceRequests=dockerinspect.device_requests(gpus) if gpus else None,
            AutoRemove="--rm" in options,
            RestartPolicy={"Name": restart.partition(":")[0], "MaximumRetryCount": 0},
            Privileged="--privileged" in options,
        )
    except dockerinspect.OptionError as exc:
        raise (daemon_run_error(str(exc)) if exc.daemon else run_usage_error(str(exc))) from None
    return host, mounts


def image_for_run(state: NodeState, ref: str) -> Record:
    """The local image `ref` names, pulled first when it is not (as the daemon does): a pull that
    fails ends the run with exit 125, its reason in the daemon's words."""
    image = find_image(state.images(), ref)
    if image is not None:
        return image
    err(f"Unable to find image '{ref}' locally")
    try:
        lines = pull(state, ref)
    except RegistryError as exc:
        raise daemon_run_error(str(exc)) from None
    err("".join(lines).rstrip("\n"))
    image = find_image(state.images(), ref)
    if image is None:  # the registry named an id this node does not hold (see `pull`)
        raise daemon_run_error(f"No such image: {ref}")
    return image


CONTAINER_NAME = re.compile(r"^/?[a-zA-Z0-9][a-zA-Z0-9_.-]+$")


def cmd_run(state: NodeState, args: list[str]) -> int:
    options, positionals = split_options(args, RUN_VALUE_FLAGS, True)
    if not positionals:
        raise DockerError(
            "\"docker run\" requires at least 1 argument.\nSee 'docker run --help'.\n\n"
            "Usage:  docker run [OPTIONS] IMAGE [COMMAND] [ARG...]\n\n"
            "Run a command in a new container",
            1,
        )
    ref, command = positionals[0], positionals[1:]
    cid = os.urandom(32).hex()
    host, mounts = run_options(options, cid, docker_root(state) / "volumes")
    image = image_for_run(state, ref)
    detach = "-d" in options or "--detach" in options
    with state.locked():
        containers = state.containers()
        name = opt(options, "--name") or f"sim_{cid[:8]}"
        if not CONTAINER_NAME.match(name):
            raise daemon_run_error(
                f"Invalid container name ({name}), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed"
            )
        for other in containers:
            if other["Name"] == name:
                raise daemon_run_error(
                    f'Conflict. The container name "/{name}" is already in use by container '
                    f'"{other["Id"]}". You have to remove (or rename) that container to be able '
                    "to reuse that name"
                )
        entrypoint = opt(options, "--entrypoint")
        argv = main_argv(image, entrypoint, command, mounts)
        words = [entrypoint] if entrypoint else list(image["Config"].get("Entrypoint") or [])
        words += command
        network = host["NetworkMode"]
        record = {
            "Id": cid,
            "Name": name,
            "Created": now_iso(),
            "Image": image["Id"],
            "Path": words[0] if words else "",
            "Args": words[1:],
            "Config": dockerinspect.config_shape(
                {
                    "Env": dockerinspect.merged_env(
                        image["Config"].get("Env"),
                        [*env_files(opts(options, "--env-file")), *opts(options, "-e", "--env")],
                    ),
                    "Cmd": command,
                    "Image": ref,
                    "Volumes": {v: {} for v in opts(options, "-v", "--volume") if ":" not in v},
                    "WorkingDir": opt(options, "-w", "--workdir") or "",
                    "Entrypoint": [entrypoint] if entrypoint else image["Config"].get("Entrypoint"),
                    "Labels": {
                        **(image["Config"].get("Labels") or {}),
                        **key_values(opts(options, "--label", "-l")),
                    },
                },
                Hostname=os.environ.get("COCKPIT_SIM_NODE", "") if network == "host" else cid[:12],
                AttachStdout=not detach,
                AttachStderr=not detach,
            ),
            "Mounts": mounts,
            "HostConfig": host,
            "State": {
                "Status": "created",
                "Running": False,
                "Pid": 0,
                "ExitCode": 0,
                "StartedAt": "",
                "FinishedAt": "",
            },
            "SimArgv": argv,
        }
        failure = None
        if host["DeviceRequests"] and not has_container_toolkit(state):
            failure = 'could not select device driver "" with capabilities: [[gpu]]'
            record["State"].update(ExitCode=128, Error=failure)
        if not (failure and "--rm" in options):
            containers.append(record)
            state.write("containers.json", containers)
    if failure:  # the daemon made the container, then could not start it
        if detach and "--rm" not in options:
            out(cid + "\n")
        raise DockerError(f"docker: Error response from daemon: {failure}.", 125)
    (state.containers_dir / cid).mkdir(parents=True, exist_ok=True)
    for mount in mounts:  # the daemon makes a missing bind source, and every volume's folder
        Path(mount["Source"]).mkdir(parents=True, exist_ok=True)
    env = container_env(state, record, image)
    workdir = opt(options, "-w", "--workdir") or str(Path.home())
    if not Path(workdir).is_dir():
        workdir = str(Path.home())
    return start_container(state, cid, argv, env, workdir, detach, "--rm" in options)


def start_container(
    state: NodeState,
    cid: str,
    argv: list[str],
    env: dict[str, str],
    cwd: str,
    detach: bool,
    auto_remove: bool,
) -> int:
    """Fork the container's keeper; detached, print the id once the main process runs, else
    stream its log until it exits and return its exit code."""
    ready_r, ready_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    child = os.fork()
    if child == 0:
        code = 125
        os.close(ready_r)
        try:
            code = supervise(state, cid, argv, env, cwd, ready_w, auto_remove and detach)
        finally:
            os._exit(code)
    os.close(ready_w)
    with os.fdopen(ready_r, "rb") as ready:
        answer = ready.read().decode()
    if detach:
        out(cid + "\n")  # the container exists before it starts: its id comes first
    if answer.startswith("error:"):
        os.waitpid(child, 0)
        if auto_remove:
            remove_record(state, cid)
        raise DockerError(f"docker: Error response from daemon: {answer[6:]}.", 127)
    if detach:
        return 0
    path = state.containers_dir / cid / "json.log"
    offset = 0
    while True:
        done, status = os.waitpid(child, os.WNOHANG)
        entries, offset = read_log_lines(path, offset)
        for entry in entries:
            emit_log(entry, False)
        if done:
            break
        time.sleep(0.05)
    if auto_remove:
        remove_record(state, cid)
    return os.waitstatus_to_exitcode(status)
