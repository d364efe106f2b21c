"""The simulated `docker` CLI of one node: images and containers recorded in the node's state dir.

Output, error messages and exit codes follow Debian's docker.io 20.10.24, the real daemon that
`tests/sim_fleet/test_docker_contract.py` compares this simulator with (that test lists, and pins,
what the simulator still does not do). The seed's trap included: an image loaded from `docker save`
has no RepoDigests, so `docker run repo@sha256:...` asks the registry for the digest: the daemon
re-attaches it silently when the registry answers (the layers are local) and the run fails with
exit 125 when the registry is down (`cockpit sim registry down`), as a real daemon does.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

from cockpit_sim.tools import dockerfmt, dockerinfo, dockerinspect
from cockpit_sim.tools.envfile import EnvFileError, read_env_file
from cockpit_sim.tools.launchers import pythonpath
from cockpit_sim.tools.nodestate import (
    REGISTRY_DOWN,
    NodeState,
    Record,
    digest_matches,
    find_image,
    parse_ref,
    pid_alive,
)
from cockpit_sim.tools.supervisor import EXEC_PIDS, now_iso, supervise

CHUNK = 1 << 20


class DockerError(Exception):
    """A failure printed as the CLI prints it, with its exit status."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


def err(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def out(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def no_such_container(name: str) -> DockerError:
    return DockerError(f"Error response from daemon: No such container: {name}")


# ------------------------------------------------------------------------------------ options

RUN_VALUE_FLAGS = {
    "--name",
    "--gpus",
    "--network",
    "--net",
    "--ipc",
    "-v",
    "--volume",
    "-e",
    "--env",
    "--env-file",
    "--label",
    "-l",
    "--shm-size",
    "--ulimit",
    "--entrypoint",
    "-w",
    "--workdir",
    "--restart",
    "--pull",
    "-p",
    "--publish",
    "--device",
    "--cap-add",
    "--cap-drop",
    "-u",
    "--user",
    "--hostname",
    "-h",
    "--memory",
    "-m",
    "--cpus",
    "--security-opt",
    "--runtime",
    "--pid",
    "--log-driver",
    "--log-opt",
    "--mount",
    "--add-host",
    "--stop-timeout",
    "--platform",
    "--tmpfs",
    "--group-add",
}
RUN_BOOL_FLAGS = {
    "-d",
    "--detach",
    "--rm",
    "-i",
    "--interactive",
    "-t",
    "--tty",
    "--privileged",
    "--init",
    "--read-only",
}


def split_options(
    args: list[str], value_flags: set[str], stop_at_positional: bool
) -> tuple[dict[str, list[str]], list[str]]:
    """Options (`--x v`, `--x=v`, `-x v`, bare flags) and positionals; with `stop_at_positional`
    everything after the first positional is positional (the container's command)."""
    args = list(args)
    options: dict[str, list[str]] = {}
    positionals: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            positionals.extend(args[i + 1 :])
            break
        options_here = not positionals or not stop_at_positional
        if options_here and re.fullmatch(r"-[a-zA-Z]{2,}.*", arg) and arg not in value_flags:
            args[i : i + 1] = bundled(arg, value_flags)  # `-aq`, `-it`, `-eA=1` (pflag)
            continue
        if arg.startswith("-") and arg != "-" and not positionals:
            name, eq, value = arg.partition("=")
            if name in value_flags:
                if not eq:
                    i += 1
                    if i >= len(args):
                        raise DockerError(f"flag needs an argument: {name}", 125)
                    value = args[i]
                options.setdefault(name, []).append(value)
            else:
                options.setdefault(name, []).append(value if eq else "true")
        elif arg.startswith("-") and arg != "-" and not stop_at_positional:
            name, eq, value = arg.partition("=")
            if name in value_flags and not eq:
                i += 1
                value = args[i] if i < len(args) else ""
            options.setdefault(name, []).append(value if (eq or name in value_flags) else "true")
        else:
            positionals.append(arg)
            if stop_at_positional:
                positionals.extend(args[i + 1 :])
                break
        i += 1
    return options, positionals


def bundled(arg: str, value_flags: set[str]) -> list[str]:
    """`-aq` → `-a -q`; a letter that takes a value takes the rest (`-eA=1` → `-e A=1`)."""
    expanded = []
    for index, letter in enumerate(arg[1:], start=1):
        flag = "-" + letter
        if flag in value_flags:
            rest = arg[index + 1 :]
            return [*expanded, flag, *([rest] if rest else [])]
        expanded.append(flag)
    return expanded


def opt(options: dict[str, list[str]], *names: str) -> str | None:
    for name in names:
        if name in options:
            return options[name][-1]
    return None


def opts(options: dict[str, list[str]], *names: str) -> list[str]:
    return [v for name in names for v in options.get(name, [])]


def env_files(paths: list[str]) -> list[str]:
    """The entries of every `--env-file`, in order (read here, as the docker client does)."""
    try:
        return [entry for path in paths for entry in read_env_file(path)]
    except EnvFileError as exc:
        raise DockerError(f"docker: {exc}.\nSee 'docker run --help'.", 125) from None


def key_values(items: list[str]) -> dict[str, str]:
    result = {}
    for item in items:
        key, _, value = item.partition("=")
        result[key] = value if _ else os.environ.get(key, "")
    return result


# ----------------------------------------------------------------------------- containers


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


def status_text(current: Record, now: datetime) -> str:
    if current.get("Running"):
        return "Up " + dockerfmt.human_duration(dockerfmt.since_now(current["StartedAt"], now))
    if current.get("Status") == "created":
        return "Created"
    ago = dockerfmt.human_duration(dockerfmt.since_now(current["FinishedAt"], now))
    return f"Exited ({current.get('ExitCode', 0)}) {ago} ago"


def ps_image(record: Record, images: list[Record], no_trunc: bool) -> str:
    """The IMAGE column: the reference the container was made from (the daemon's id instead
    once that reference names another image or none), shortened as the CLI shortens it unless
    --no-trunc: an id to 12 digits, a digest reference to its repository (its tag kept)."""
    ref = record["Config"]["Image"]
    image = find_image(images, ref)
    if image is None or image["Id"] != record["Image"]:
        ref = record["Image"]
    if no_trunc:
        return ref
    bare = ref.removeprefix("sha256:")
    if bare.startswith(record["Image"].removeprefix("sha256:")[:12]):
        return bare[:12]
    repo, tag, _ = parse_ref(ref)
    return f"{repo}:{tag}" if tag else repo


def ps_mounts(record: Record, no_trunc: bool) -> str:
    """Volume names and bind sources, each cut to 15 characters unless --no-trunc."""
    names = [m.get("Name") or m["Source"] for m in record["Mounts"]]
    if not no_trunc:
        names = [n if len(n) <= 15 else n[:14] + "…" for n in names]
    return ",".join(names)


def ps_view(record: Record, now: datetime, no_trunc: bool, images: list[Record]) -> dict[str, Any]:
    """The object `docker ps --format` templates see (all values are strings, as there); the
    labels stay apart, for `{{.Label "k"}}` (`cmd_ps` hands them to the template)."""
    current = container_state(record)
    command = shlex.join([record["Path"], *record["Args"]])
    if not no_trunc and len(command) > 20:
        command = command[:19] + "…"
    labels = record["Config"]["Labels"] or {}
    image = next((i for i in images if i["Id"] == record["Image"]), None)
    virtual = dockerfmt.human_size(image["Size"]) if image else "0B"
    network = record["HostConfig"]["NetworkMode"]
    return {
        "Command": f'"{command}"',
        "CreatedAt": dockerfmt.docker_time(record["Created"]),
        "ID": record["Id"] if no_trunc else record["Id"][:12],
        "Image": ps_image(record, images, no_trunc),
        "Labels": ",".join(f"{k}={v}" for k, v in sorted(labels.items())),
        "LocalVolumes": str(sum(1 for m in record["Mounts"] if m["Type"] == "volume")),
        "Mounts": ps_mounts(record, no_trunc),
        "Names": record["Name"],
        "Networks": "bridge" if network == "default" else network,
        "Ports": "",
        "RunningFor": dockerfmt.human_duration(dockerfmt.since_now(record["Created"], now))
        + " ago",
        "Size": f"0B (virtual {virtual})",
        "State": current["Status"],
        "Status": status_text(current, now),
    }


PS_FILTERS = frozenset(
    [
        "ancestor",
        "before",
        "expose",
        "exited",
        "health",
        "id",
        "isolation",
        "is-task",
        "label",
        "name",
        "network",
        "publish",
        "since",
        "status",
        "volume",
    ]
)
STATUSES = frozenset(["created", "restarting", "running", "removing", "paused", "exited", "dead"])


def check_filters(filters: list[str]) -> None:
    """Refuse what the daemon refuses: unknown filter keys, unknown states."""
    for item in filters:
        key, _, value = item.partition("=")
        if key not in PS_FILTERS or (key == "status" and value not in STATUSES):
            raise DockerError(
                f"Error response from daemon: Invalid filter '{item if key == 'status' else key}'"
            )


def _matches(key: str, value: str, view: dict[str, Any], record: Record) -> bool:
    if key == "name":  # a regular expression, matched with and without the leading slash
        return any(re.search(value, n) for n in (record["Name"], "/" + record["Name"]))
    if key == "id":
        return bool(record["Id"].startswith(value))
    if key == "status":
        return bool(view["State"] == value)
    if key == "ancestor":
        return value in (record["Config"]["Image"], record["Image"])
    return True


def match_filters(view: dict[str, Any], record: Record, filters: list[str]) -> bool:
    for item in filters:
        key, _, value = item.partition("=")
        if key == "label":
            lkey, eq, lvalue = value.partition("=")
            labels = record["Config"]["Labels"] or {}
            if lkey not in labels or (eq and labels[lkey] != lvalue):
                return False
        elif not _matches(key, value, view, record):
            return False
    return True


def cmd_ps(state: NodeState, args: list[str]) -> int:
    options, _ = split_options(args, {"--format", "--filter", "-f", "-n", "--last"}, False)
    show_all = "-a" in options or "--all" in options
    no_trunc = "--no-trunc" in options
    filters = opts(options, "--filter", "-f")
    check_filters(filters)
    now = datetime.now(UTC)
    images = state.images()
    rows, labels = [], []
    for record in reversed(state.containers()):
        view = ps_view(record, now, no_trunc, images)
        if not show_all and view["State"] != "running":
            continue
        if match_filters(view, record, filters):
            rows.append(view)
            labels.append(record["Config"]["Labels"] or {})
    if "-q" in options or "--quiet" in options:
        out("".join(v["ID"] + "\n" for v in rows))
        return 0
    template = opt(options, "--format") or (
        "table {{.ID}}\t{{.Image}}\t{{.Command}}\t{{.RunningFor}}\t{{.Status}}\t{{.Ports}}"
        "\t{{.Names}}"
    )
    out(dockerfmt.render_rows(template, rows, dockerfmt.HEADERS, labels))
    return 0


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


def docker_root(state: NodeState) -> Path:
    """The node's Docker Root Dir: named volumes live in its `volumes/NAME/_data`."""
    return state.dir / "docker"


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


def has_container_toolkit(state: NodeState) -> bool:
    return not state.facts().get("faults", {}).get(dockerinfo.NO_TOOLKIT_FAULT)


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


def parse_since(text: str, now: datetime) -> datetime:
    """`--since`: RFC 3339, a unix timestamp, or a Go duration relative to now (10m, 1h30m)."""
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return datetime.fromtimestamp(float(text), UTC)
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", text)
    if parts and "".join(a + b for a, b in parts) == text:
        scale = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
        return now - timedelta(seconds=sum(float(a) * scale[b] for a, b in parts))
    moment = dockerfmt.parse_time(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def read_log_lines(path: Path, offset: int) -> tuple[list[Record], int]:
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except FileNotFoundError:
        return [], offset
    complete = data.rfind(b"\n") + 1
    lines = [json.loads(line) for line in data[:complete].splitlines() if line]
    return lines, offset + complete


def emit_log(entry: Record, timestamps: bool) -> None:
    text = entry["log"]
    if timestamps:
        text = dockerfmt.rfc3339_nano(dockerfmt.parse_time(entry["time"])) + " " + text
    stream = sys.stdout if entry["stream"] == "stdout" else sys.stderr
    stream.write(text)
    stream.flush()


def follow_logs(
    state: NodeState,
    cid: str,
    *,
    tail: int | None,
    since: datetime | None,
    timestamps: bool,
    follow: bool,
) -> None:
    path = state.containers_dir / cid / "json.log"
    entries, offset = read_log_lines(path, 0)
    if since is not None:
        entries = [e for e in entries if dockerfmt.parse_time(e["time"]) >= since]
    if tail is not None:
        entries = entries[-tail:] if tail > 0 else []
    for entry in entries:
        emit_log(entry, timestamps)
    while follow:
        record = find_container(state, cid)
        running = record is not None and container_state(record).get("Running")
        entries, offset = read_log_lines(path, offset)
        for entry in entries:
            emit_log(entry, timestamps)
        if not running and not entries:
            entries, offset = read_log_lines(path, offset)
            for entry in entries:
                emit_log(entry, timestamps)
            return
        time.sleep(0.1)


def cmd_logs(state: NodeState, args: list[str]) -> int:
    options, names = split_options(args, {"--tail", "-n", "--since", "--until"}, False)
    if len(names) != 1:
        raise DockerError("\"docker logs\" requires exactly 1 argument.\nSee 'docker logs --help'.")
    record = find_container(state, names[0])
    if record is None:
        raise DockerError(f"Error: No such container: {names[0]}")
    tail_text = opt(options, "--tail", "-n")
    since_text = opt(options, "--since")
    follow_logs(
        state,
        record["Id"],
        tail=None if tail_text in (None, "all") else int(tail_text),
        since=parse_since(since_text, datetime.now(UTC)) if since_text else None,
        timestamps="-t" in options or "--timestamps" in options,
        follow="-f" in options or "--follow" in options,
    )
    return 0


# --------------------------------------------------------------------------------- images


def public(record: Record) -> Record:
    """A record as `docker inspect` prints it (the simulator's own keys removed)."""
    return {k: v for k, v in record.items() if not k.startswith("Sim")}


def image_rows(images: list[Record], digests: bool, now: datetime) -> list[dict[str, Any]]:
    rows = []
    for image in reversed(images):
        repo_digests = {d.split("@")[0]: d.split("@")[1] for d in image["RepoDigests"]}
        pairs = [parse_ref(t)[:2] for t in image["RepoTags"]]
        pairs += [(r, None) for r in repo_digests if r not in {p[0] for p in pairs}]
        for repo, tag in pairs or [(None, None)]:
            rows.append(
                {
                    "Containers": "N/A",
                    "CreatedAt": dockerfmt.docker_time(image["Created"]),
                    "CreatedSince": dockerfmt.human_duration(
                        dockerfmt.since_now(image["Created"], now)
                    )
                    + " ago",
                    "Digest": repo_digests.get(repo or "", "<none>"),
                    "ID": image["Id"].removeprefix("sha256:")[:12],
                    "Repository": repo or "<none>",
                    "SharedSize": "N/A",
                    "Size": dockerfmt.human_size(image["Size"]),
                    "Tag": tag or "<none>",
                    "UniqueSize": "N/A",
                    "VirtualSize": dockerfmt.human_size(image["Size"], 4),
                }
            )
    return rows


def cmd_images(state: NodeState, args: list[str]) -> int:
    options, positionals = split_options(args, {"--format", "--filter", "-f"}, False)
    digests = "--digests" in options
    rows = image_rows(state.images(), digests, datetime.now(UTC))
    if positionals:
        repo, tag, _ = parse_ref(positionals[0])
        rows = [r for r in rows if r["Repository"] == repo and (tag is None or r["Tag"] == tag)]
    if "--no-trunc" in options:
        full = {i["Id"].removeprefix("sha256:")[:12]: i["Id"] for i in state.images()}
        for row in rows:
            row["ID"] = full[row["ID"]]
    if "-q" in options or "--quiet" in options:
        seen: list[str] = []
        for row in rows:
            if row["ID"] not in seen:
                seen.append(row["ID"])
        out("".join(i + "\n" for i in seen))
        return 0
    default = "table {{.Repository}}\t{{.Tag}}\t"
    default += "{{.Digest}}\t" if digests else ""
    default += "{{.ID}}\t{{.CreatedSince}}\t{{.Size}}"
    out(dockerfmt.render_rows(opt(options, "--format") or default, rows, dockerfmt.IMAGE_HEADERS))
    return 0


EXEC_ROOT = "/var/run/docker"


def print_inspect(objects: list[Record], template: str | None) -> None:
    """JSON as the daemon's (indent 4, no ASCII escapes), or the template once per object (a
    template with nothing found still prints its empty line, as Docker 20.10 does)."""
    if template:
        out("".join(dockerfmt.render_template(template, o) + "\n" for o in objects) or "\n")
    else:
        out(json.dumps(objects, indent=4, ensure_ascii=False) + "\n")


def container_inspect(state: NodeState, record: Record) -> Record:
    root = str(docker_root(state))
    return dockerinspect.container_shape(record, container_state(record), root, EXEC_ROOT)


def image_inspect(state: NodeState, image: Record) -> Record:
    version = image.get("DockerVersion") or dockerinfo.SERVER_VERSION
    return dockerinspect.image_shape(image, str(docker_root(state)), version)


def cmd_inspect(state: NodeState, args: list[str], kind: str) -> int:
    options, names = split_options(args, {"--format", "-f", "--type"}, False)
    template = opt(options, "--format", "-f")
    kind = opt(options, "--type") or kind
    found: list[Record] = []
    missing: list[str] = []
    images = state.images()
    for name in names:
        record = None if kind == "image" else find_container(state, name)
        if record is not None:
            found.append(container_inspect(state, record))
            continue
        image = None if kind == "container" else find_image(images, name)
        if image is not None:
            found.append(image_inspect(state, image))
        else:
            missing.append(name)
    print_inspect(found, template)
    what = {"image": "image", "container": "container"}.get(kind, "object")
    for name in missing:
        err(f"Error: No such {what}: {name}")
    return 1 if missing else 0


def layer_bytes(image_id: str, size: int) -> Iterator[bytes]:
    """Deterministic filler standing for the image's layers (same id, same bytes)."""
    import hashlib

    block = b"".join(hashlib.sha256(f"{image_id}:{i}".encode()).digest() for i in range(2048))
    while size > 0:
        piece = block[: min(size, len(block))]
        size -= len(piece)
        yield piece


def _tar_header(name: str, size: int) -> bytes:
    import tarfile

    info = tarfile.TarInfo(name)
    info.size = size
    info.mtime = 0
    info.mode = 0o644
    return info.tobuf(format=tarfile.USTAR_FORMAT)


def _padded(data_len: int) -> int:
    return -data_len % 512


def save_stream(image: Record, tags: list[str]) -> Iterator[bytes]:
    """A `docker save` archive of exactly SimBytes bytes: config blob, one layer, manifest."""
    import hashlib

    image_id = image["Id"].removeprefix("sha256:")
    config = json.dumps(
        {
            **public(image),
            "RepoDigests": [],
            "SimEngine": image.get("SimEngine"),
            "SimRepo": image.get("SimRepo"),
        }
    ).encode()
    config_name = f"blobs/sha256/{image_id}"

    def manifest_for(layer):
        return json.dumps(
            [{"Config": config_name, "RepoTags": tags or None, "Layers": [f"blobs/sha256/{layer}"]}]
        ).encode()

    manifest_len = len(manifest_for("0" * 64))
    fixed = 512 * 3 + len(config) + _padded(len(config)) + manifest_len + _padded(manifest_len)
    layer_size = max(0, image["SimBytes"] - fixed - 1024)
    layer_size -= layer_size % 512
    digest = hashlib.sha256()
    for piece in layer_bytes(image_id, layer_size):
        digest.update(piece)
    layer = digest.hexdigest()
    manifest = manifest_for(layer)
    yield _tar_header(config_name, len(config)) + config + b"\0" * _padded(len(config))
    yield _tar_header(f"blobs/sha256/{layer}", layer_size)
    yield from layer_bytes(image_id, layer_size)
    yield _tar_header("manifest.json", len(manifest)) + manifest + b"\0" * _padded(len(manifest))
    yield b"\0" * 1024


def cmd_save(state: NodeState, args: list[str]) -> int:
    options, refs = split_options(args, {"-o", "--output"}, False)
    target = opt(options, "-o", "--output")
    if target is None and sys.stdout.isatty():
        raise DockerError("cowardly refusing to save to a terminal. Use the -o flag or redirect")
    images = state.images()
    chosen: dict[str, Record] = {}
    tags: list[str] = []  # only the references given as tags travel in the archive
    for ref in refs:
        image = find_image(images, ref)
        if image is None:
            raise DockerError("Error response from daemon: reference does not exist")
        chosen[image["Id"]] = image
        repo, tag, digest = parse_ref(ref)
        named = f"{repo}:{tag or 'latest'}"
        if digest is None and named in image["RepoTags"] and named not in tags:
            tags.append(named)
    if len(chosen) != 1:
        raise DockerError("docker save: this simulator saves exactly one image per archive")
    sink: IO[bytes] = open(target, "wb") if target else sys.stdout.buffer  # noqa: SIM115
    try:
        for piece in save_stream(next(iter(chosen.values())), tags):
            sink.write(piece)
        sink.flush()
    except BrokenPipeError:
        raise DockerError("write /dev/stdout: broken pipe") from None
    finally:
        if target:
            sink.close()
    return 0


def read_archive(source: IO[bytes]) -> tuple[Record, list[str]]:
    """Parse and verify a `docker save` stream: the image config and its tags."""
    import hashlib
    import tarfile

    config: Record | None = None
    manifest: list[Record] | None = None
    hashes: dict[str, str] = {}
    try:
        with tarfile.open(fileobj=source, mode="r|") as archive:
            for member in archive:
                handle = archive.extractfile(member)
                if handle is None:
                    continue
                if member.name == "manifest.json":
                    manifest = json.loads(handle.read())
                elif member.size < 1 << 20:
                    data = handle.read()
                    hashes[member.name] = hashlib.sha256(data).hexdigest()
                    config = json.loads(data) if config is None else config
                else:
                    digest = hashlib.sha256()
                    while piece := handle.read(CHUNK):
                        digest.update(piece)
                    hashes[member.name] = digest.hexdigest()
    except (tarfile.TarError, EOFError, json.JSONDecodeError, OSError):
        raise DockerError("Error processing tar file(exit status 1): unexpected EOF") from None
    if manifest is None or config is None:
        raise DockerError("Error processing tar file(exit status 1): unexpected EOF")
    for layer in manifest[0]["Layers"]:
        if hashes.get(layer) != layer.rsplit("/", 1)[-1]:
            raise DockerError(f"Error processing tar file: layer {layer} digest mismatch")
    return config, list(manifest[0]["RepoTags"] or [])


def cmd_load(state: NodeState, args: list[str]) -> int:
    options, _ = split_options(args, {"-i", "--input"}, False)
    source = opt(options, "-i", "--input")
    if source is None and sys.stdin.isatty():
        raise DockerError("requested load from stdin, but stdin is empty")
    with open(source, "rb") if source else sys.stdin.buffer as stream:
        config, tags = read_archive(stream)
    with state.locked():
        images = state.images()
        for image in images:
            image["RepoTags"] = [t for t in image["RepoTags"] if t not in tags]
        existing = next((i for i in images if i["Id"] == config["Id"]), None)
        if existing is not None:
            existing["RepoTags"] = sorted(set(existing["RepoTags"]) | set(tags))
        else:
            from cockpit_sim.tools.nodestate import sim_bytes

            config["RepoTags"] = tags
            config["RepoDigests"] = []
            config["SimBytes"] = sim_bytes(config["Size"])
            images.append(config)
        state.write("images.json", images)
    quiet = "-q" in options or "--quiet" in options
    if not quiet:
        out("".join(f"Loaded image: {t}\n" for t in tags) or f"Loaded image ID: {config['Id']}\n")
    return 0


class RegistryError(Exception):
    """The registry could not give the manifest; the message is the daemon's reason."""


def fleet_dir() -> Path:
    return Path(os.environ["COCKPIT_SIM_FLEET_DIR"])


def registry_entries() -> dict[str, str]:
    """The simulated registry: `repo@sha256:…` (and `repo:tag`) → the image id it names."""
    try:
        return json.loads((fleet_dir() / "registry.json").read_text())
    except (KeyError, FileNotFoundError):
        return {}


def registry_host(repo: str) -> str:
    head = repo.split("/", 1)[0]
    named = "/" in repo and ("." in head or ":" in head or head == "localhost")
    return head if named else "registry-1.docker.io"


def unreachable(repo: str) -> str:
    """What the daemon says when the registry does not answer: a loopback or ip:port registry
    refuses the connection (plain http, insecure by default on 127.0.0.0/8); a named one cannot
    be looked up, as on a node cut off from it."""
    host = registry_host(repo)
    if re.fullmatch(r"[\d.]+(:\d+)?|localhost(:\d+)?", host):
        return f'Get "http://{host}/v2/": dial tcp {host}: connect: connection refused'
    return f'Get "https://{host}/v2/": dial tcp: lookup {host}: no such host'


def pull(state: NodeState, ref: str) -> list[str]:
    """Pull `ref` (by digest or tag) from the simulated registry; return the progress lines.

    The registry holds manifests only: a pull succeeds when the image id its manifest names is
    already on the node (as after `docker load`), and re-attaches the digest (and the tag),
    moving no layers. Raises RegistryError with the daemon's reason otherwise."""
    repo, tag, digest = parse_ref(ref)
    if os.environ.get("COCKPIT_SIM_FLEET_DIR") is None or (fleet_dir() / REGISTRY_DOWN).exists():
        raise RegistryError(unreachable(repo))
    entries = registry_entries()
    wanted = f"{repo}:{tag or 'latest'}"
    if digest is not None:
        full, image_id = next(
            ((k, v) for k, v in entries.items() if digest_matches(k, repo, digest)), ("", None)
        )
    else:
        image_id = entries.get(wanted)
        full = next(
            (
                k
                for k, v in entries.items()
                if v == image_id and "@" in k and k.partition("@")[0] == repo
            ),
            "",
        )
    if image_id is None:
        raise RegistryError(f"manifest for {ref} not found: manifest unknown: manifest unknown")
    with state.locked():
        images = state.images()
        image = next((i for i in images if i["Id"] == image_id), None)
        if image is None:
            raise RegistryError(
                f"the simulated registry holds manifests only: the layers of {ref} "
                f"({image_id[:19]}) are not on this node"
            )
        before = (list(image["RepoDigests"]), list(image["RepoTags"]))
        if full and full not in image["RepoDigests"]:
            image["RepoDigests"].append(full)
        if digest is None:
            for other in images:
                other["RepoTags"] = [t for t in other["RepoTags"] if t != wanted]
            image["RepoTags"].append(wanted)
        changed = (image["RepoDigests"], image["RepoTags"]) != before
        if changed:
            state.write("images.json", images)
    path = repo.split("/", 1)[1] if registry_host(repo) != "registry-1.docker.io" else repo
    status = "Downloaded newer image for" if changed else "Image is up to date for"
    return [
        f"{ref if digest else tag or 'latest'}: Pulling from {path}\n",
        f"Digest: {full.partition('@')[2] or digest}\n",
        f"Status: {status} {ref}\n",
    ]


def cmd_pull(state: NodeState, args: list[str]) -> int:
    options, refs = split_options(args, {"--platform"}, False)
    if len(refs) != 1:
        raise DockerError(
            "\"docker pull\" requires exactly 1 argument.\nSee 'docker pull --help'.\n\n"
            "Usage:  docker pull [OPTIONS] NAME[:TAG|@DIGEST]\n\n"
            "Pull an image or a repository from a registry"
        )
    try:
        lines = pull(state, refs[0])
    except RegistryError as exc:
        raise DockerError(f"Error response from daemon: {exc}") from None
    if "-q" not in options and "--quiet" not in options:
        out("".join(lines))
    out(f"{refs[0]}\n")
    return 0


def cmd_tag(state: NodeState, args: list[str]) -> int:
    if len(args) != 2:
        raise DockerError('"docker tag" requires exactly 2 arguments.')
    source, target = args
    repo, tag, _ = parse_ref(target)
    target = f"{repo}:{tag or 'latest'}"
    with state.locked():
        images = state.images()
        image = find_image(images, source)
        if image is None:
            raise DockerError(f"Error response from daemon: No such image: {source}")
        for other in images:
            other["RepoTags"] = [t for t in other["RepoTags"] if t != target]
        image["RepoTags"].append(target)
        state.write("images.json", images)
    return 0


def repo_of(reference: str) -> str:
    return parse_ref(reference)[0]


def single_reference(refs: list[str]) -> bool:
    """The daemon's isSingleReference: every reference in one repository, at most one tag."""
    return len({repo_of(r) for r in refs}) <= 1 and sum("@" not in r for r in refs) <= 1


def untag(image: Record, ref: str) -> list[str]:
    """Remove the reference `ref` names (a tag, or a digest); a tag that was its repository's
    last takes that repository's digests along. Returns the Untagged lines."""
    repo, tag, digest = parse_ref(ref)
    if digest is None:
        name = f"{repo}:{tag or 'latest'}"
        image["RepoTags"].remove(name)
        removed = [name]
        if not any(repo_of(t) == repo for t in image["RepoTags"]):
            removed += [d for d in image["RepoDigests"] if repo_of(d) == repo]
            image["RepoDigests"] = [d for d in image["RepoDigests"] if repo_of(d) != repo]
    else:
        full = next(d for d in image["RepoDigests"] if digest_matches(d, repo, digest))
        image["RepoDigests"].remove(full)
        removed = [full]
    return [f"Untagged: {r}" for r in removed]


def delete_conflict(image: Record, users: list[Record], force: bool) -> str | None:
    """Why the image may not go: a running container's (even forced), a stopped one's."""
    short = image["Id"].removeprefix("sha256:")[:12]
    running = [c for c in users if container_state(c).get("Running")]
    if running:
        return (
            f"conflict: unable to delete {short} (cannot be forced) - image is being used by "
            f"running container {running[0]['Id'][:12]}"
        )
    if users and not force:
        return (
            f"conflict: unable to delete {short} (must be forced) - image is being used by "
            f"stopped container {users[0]['Id'][:12]}"
        )
    return None


def remove_image(state: NodeState, ref: str, force: bool) -> list[str]:
    """`docker rmi REF` as the daemon's ImageDelete decides it; the lines it prints, or a
    DockerError with the daemon's conflict."""
    images = state.images()
    image = find_image(images, ref)
    if image is None:
        raise DockerError(f"Error: No such image: {ref}")
    users = [c for c in state.containers() if c["Image"] == image["Id"]]
    refs = image["RepoTags"] + image["RepoDigests"]
    bare = ref.removeprefix("sha256:")
    by_id = bool(re.fullmatch(r"[0-9a-f]{4,64}", bare)) and image["Id"][7:].startswith(bare)
    lines: list[str] = []
    if not by_id:
        if not force and single_reference(refs) and users:
            raise DockerError(
                f'Error response from daemon: conflict: unable to remove repository reference "'
                f'{ref}" (must force) - container {users[0]["Id"][:12]} is using its referenced '
                f"image {image['Id'].removeprefix('sha256:')[:12]}"
            )
        lines = untag(image, ref)
        if image["RepoTags"] or image["RepoDigests"]:
            state.write("images.json", images)
            return lines
    elif single_reference(refs) or force:
        conflict = delete_conflict(image, users, force)
        if conflict:
            raise DockerError(f"Error response from daemon: {conflict}")
        lines = [f"Untagged: {r}" for r in refs]
    else:
        short = image["Id"].removeprefix("sha256:")[:12]
        raise DockerError(
            f"Error response from daemon: conflict: unable to delete {short} (must be forced) - "
            "image is referenced in multiple repositories"
        )
    conflict = delete_conflict(image, users, force)
    if conflict:
        raise DockerError(f"Error response from daemon: {conflict}")
    state.write("images.json", [i for i in images if i["Id"] != image["Id"]])
    kept = bool(users)  # a (stopped) container's layer still stands on the image's layers
    layers = [] if kept else [f"Deleted: {layer}" for layer in dockerinspect.layer_ids(image)]
    return [*lines, f"Deleted: {image['Id']}", *layers]


def cmd_rmi(state: NodeState, args: list[str]) -> int:
    options, refs = split_options(args, set(), False)
    force = "-f" in options or "--force" in options
    status = 0
    for ref in refs:
        try:
            with state.locked():
                lines = remove_image(state, ref, force)
        except DockerError as exc:
            err(str(exc))  # a missing image is no failure when forced, as with `rm -f`
            status = status if force and "No such image" in str(exc) else 1
            continue
        out("".join(line + "\n" for line in lines))
    return status


# ------------------------------------------------------------------------ system, stats, exec

GB10_CPUS = 20  # 10 Cortex-X925 + 10 Cortex-A725 cores
NODE_ARCH = ("aarch64", "arm64")  # a DGX Spark, as uname and as Go spell it


def mem_total() -> int:
    """The node's MemTotal in bytes (its /proc/meminfo: the node's own, in its namespace)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    return 0


def os_release() -> tuple[str, str]:
    """PRETTY_NAME and VERSION_ID of the node's /etc/os-release."""
    fields: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/etc/os-release").read_text().splitlines():
            key, _, value = line.partition("=")
            fields[key] = value.strip('"')
    return fields.get("PRETTY_NAME", "Linux"), fields.get("VERSION_ID", "")


def daemon_facts(state: NodeState) -> dockerinfo.Daemon:
    states = [container_state(c) for c in state.containers()]
    running = sum(1 for s in states if s.get("Running"))
    operating_system, os_version = os_release()
    return dockerinfo.Daemon(
        name=os.environ.get("COCKPIT_SIM_NODE") or os.uname().nodename,
        cpus=GB10_CPUS,
        mem_total=mem_total(),
        root_dir=str(docker_root(state)),
        kernel=os.uname().release,
        operating_system=operating_system,
        os_version=os_version,
        architecture=NODE_ARCH[0],
        running=running,
        paused=0,
        stopped=len(states) - running,
        images=len(state.images()),
        nvidia=has_container_toolkit(state),
        system_time=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f000Z"),
    )


def cmd_info(state: NodeState, args: list[str]) -> int:
    options, _ = split_options(args, {"--format", "-f"}, False)
    info = dockerinfo.info_object(daemon_facts(state))
    template = opt(options, "--format", "-f")
    out(
        dockerfmt.render_template(template, info) + "\n" if template else dockerinfo.info_text(info)
    )
    return 0


def cmd_version(state: NodeState, args: list[str]) -> int:
    options, _ = split_options(args, {"--format", "-f"}, False)
    version = dockerinfo.version_object(os.uname().release, NODE_ARCH[1])
    template = opt(options, "--format", "-f")
    out(
        dockerfmt.render_template(template, version) + "\n"
        if template
        else dockerinfo.version_text(version)
    )
    return 0


def session_processes(sid: int) -> list[tuple[int, int, int]]:
    """(pid, cpu ticks, rss pages) of every process in session `sid` (a container's processes:
    its main process leads a session of its own)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append((int(entry.name), int(fields[11]) + int(fields[12]), int(fields[21])))
    return found


STATS_SAMPLE_S = 0.5
STATS_TEMPLATE = (
    "table {{.ID}}\t{{.Name}}\t{{.CPUPerc}}\t{{.MemUsage}}\t{{.MemPerc}}\t{{.NetIO}}"
    "\t{{.BlockIO}}\t{{.PIDs}}"
)
STATS_HEADERS = {
    "ID": "CONTAINER ID",
    "Container": "CONTAINER",
    "Name": "NAME",
    "CPUPerc": "CPU %",
    "MemUsage": "MEM USAGE / LIMIT",
    "MemPerc": "MEM %",
    "NetIO": "NET I/O",
    "BlockIO": "BLOCK I/O",
    "PIDs": "PIDS",
}


def stats_rows(chosen: list[tuple[str, Record]], limit: int) -> list[dict[str, str]]:
    """One `docker stats` row per (name as asked, record): CPU from two samples of the
    container's processes STATS_SAMPLE_S apart, memory their resident set (host networking:
    no network counters of its own)."""
    pids = {
        record["Id"]: int(container_state(record).get("Pid") or 0)
        for _, record in chosen
        if container_state(record).get("Running")
    }
    first = {cid: session_processes(pid) for cid, pid in pids.items()}
    time.sleep(STATS_SAMPLE_S if pids else 0)
    second = {cid: session_processes(pid) for cid, pid in pids.items()}
    tick, page = os.sysconf("SC_CLK_TCK"), os.sysconf("SC_PAGE_SIZE")
    rows = []
    for asked, record in chosen:
        cid = record["Id"]
        now = second.get(cid, [])
        before = {p: ticks for p, ticks, _ in first.get(cid, [])}
        ticks = sum(t - before.get(p, t) for p, t, _ in now)
        rss = sum(pages for _, _, pages in now) * page
        running = cid in pids
        rows.append(
            {
                "BlockIO": "0B / 0B",
                "CPUPerc": f"{100 * ticks / tick / STATS_SAMPLE_S:.2f}%",
                "Container": asked,
                "ID": cid[:12],
                "MemPerc": f"{100 * rss / limit:.2f}%" if running and limit else "0.00%",
                "MemUsage": (
                    f"{dockerinfo.bytes_size(rss)} / {dockerinfo.bytes_size(limit)}"
                    if running
                    else "0B / 0B"
                ),
                "Name": record["Name"],
                "NetIO": "0B / 0B",
                "PIDs": str(len(now)),
            }
        )
    return rows


def cmd_stats(state: NodeState, args: list[str]) -> int:
    options, names = split_options(args, {"--format"}, False)
    if names:
        chosen = []
        for name in names:
            record = find_container(state, name)
            if record is None:
                raise DockerError(f"Error response from daemon: No such container: {name}")
            chosen.append((name, record))
    else:
        show_all = "-a" in options or "--all" in options
        chosen = [
            (c["Id"][:12], c)
            for c in reversed(state.containers())
            if show_all or container_state(c).get("Running")
        ]
    template = opt(options, "--format") or STATS_TEMPLATE
    limit = mem_total()
    while True:
        text = dockerfmt.render_rows(template, stats_rows(chosen, limit), STATS_HEADERS)
        if "--no-stream" in options:
            out(text)
            return 0
        out("\x1b[2J\x1b[H" + text)  # the streaming CLI redraws the screen every second
        time.sleep(max(0.0, 1.0 - STATS_SAMPLE_S))


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


# ------------------------------------------------------------------------------------ main

Command = Callable[[NodeState, list[str]], int]
COMMANDS: dict[str, Command] = {
    "ps": cmd_ps,
    "run": cmd_run,
    "stop": cmd_stop,
    "rm": cmd_rm,
    "logs": cmd_logs,
    "images": cmd_images,
    "inspect": lambda s, a: cmd_inspect(s, a, "any"),
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
    ("container", "inspect"): lambda s, a: cmd_inspect(s, a, "container"),
    ("container", "stats"): cmd_stats,
    ("container", "exec"): cmd_exec,
    ("system", "info"): cmd_info,
    ("image", "ls"): cmd_images,
    ("image", "list"): cmd_images,
    ("image", "inspect"): lambda s, a: cmd_inspect(s, a, "image"),
    ("image", "save"): cmd_save,
    ("image", "load"): cmd_load,
    ("image", "pull"): cmd_pull,
    ("image", "tag"): cmd_tag,
    ("image", "rm"): cmd_rmi,
}


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
    if args[0] in ("--version", "-v"):
        version = dockerinfo.SERVER_VERSION
        out(f"Docker version {version}, build {dockerinfo.CLIENT_COMMIT}\n")
        return 0
    command: Command | None
    if len(args) >= 2 and (args[0], args[1]) in GROUPS:
        command, rest = GROUPS[(args[0], args[1])], args[2:]
    else:
        command, rest = COMMANDS.get(args[0]), args[1:]
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
