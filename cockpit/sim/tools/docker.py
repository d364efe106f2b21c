"""The simulated `docker` CLI of one node: images and containers recorded in the node's state dir.

Output and error messages follow the real Docker CLI (v27), including the seed's trap: an image
loaded from `docker save` has no RepoDigests, so `docker run repo@sha256:...` fails with
"No such image" until `docker pull repo@sha256:...` re-attaches the digest.
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

from cockpit.sim.tools import dockerfmt
from cockpit.sim.tools.envfile import EnvFileError, read_env_file
from cockpit.sim.tools.nodestate import (
    NodeState,
    Record,
    digest_matches,
    find_image,
    parse_ref,
    pid_alive,
)
from cockpit.sim.tools.supervisor import now_iso, supervise

PROJECT_ROOT = Path(__file__).resolve().parents[3]
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
    "-it",
    "-ti",
    "--read-only",
}


def split_options(
    args: list[str], value_flags: set[str], stop_at_positional: bool
) -> tuple[dict[str, list[str]], list[str]]:
    """Options (`--x v`, `--x=v`, `-x v`, bare flags) and positionals; with `stop_at_positional`
    everything after the first positional is positional (the container's command)."""
    options: dict[str, list[str]] = {}
    positionals: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            positionals.extend(args[i + 1 :])
            break
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


def ps_view(record: Record, now: datetime, no_trunc: bool) -> dict[str, Any]:
    """The object `docker ps --format` templates see (all values are strings, as there)."""
    current = container_state(record)
    command = shlex.join([record["Path"], *record["Args"]])
    if not no_trunc and len(command) > 20:
        command = command[:19] + "…"
    labels = record["Config"]["Labels"]
    return {
        "Command": f'"{command}"',
        "CreatedAt": dockerfmt.docker_time(record["Created"]),
        "ID": record["Id"] if no_trunc else record["Id"][:12],
        "Image": record["Config"]["Image"],
        "Labels": ",".join(f"{k}={v}" for k, v in sorted(labels.items())),
        "LocalVolumes": "0",
        "Mounts": ",".join(m["Source"] for m in record["Mounts"]),
        "Names": record["Name"],
        "Networks": record["HostConfig"]["NetworkMode"],
        "Ports": "",
        "RunningFor": dockerfmt.human_duration(dockerfmt.since_now(record["Created"], now))
        + " ago",
        "Size": "0B",
        "State": current["Status"],
        "Status": status_text(current, now),
        "_labels": labels,
    }


def _matches(key: str, value: str, view: dict[str, Any], record: Record) -> bool:
    if key == "name":
        return value in record["Name"]
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
            labels = record["Config"]["Labels"]
            if lkey not in labels or (eq and labels[lkey] != lvalue):
                return False
        elif not _matches(key, value, view, record):
            return False
    return True


def cmd_ps(state: NodeState, args: list[str]) -> int:
    options, _ = split_options(args, {"--format", "--filter", "-f", "-n", "--last"}, False)
    show_all = "-a" in options or "--all" in options
    no_trunc = "--no-trunc" in options
    now = datetime.now(UTC)
    rows = []
    for record in reversed(state.containers()):
        view = ps_view(record, now, no_trunc)
        if not show_all and view["State"] != "running":
            continue
        if match_filters(view, record, opts(options, "--filter", "-f")):
            rows.append(view)
    if "-q" in options or "--quiet" in options:
        out("".join(v["ID"] + "\n" for v in rows))
        return 0
    template = opt(options, "--format") or (
        "table {{.ID}}\t{{.Image}}\t{{.Command}}\t{{.RunningFor}}\t{{.Status}}\t{{.Ports}}"
        "\t{{.Names}}"
    )
    out(dockerfmt.render_rows(template, rows, dockerfmt.HEADERS))
    return 0


def container_env(state: NodeState, record: Record, image: Record) -> dict[str, str]:
    """The main process's environment: the node's, the image's, `-e`, and the simulator's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SSH_")}
    env.update(key_values(image["Config"].get("Env") or []))
    given = key_values(record["Config"]["Env"])
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
        PYTHONPATH=os.pathsep.join(p for p in (str(PROJECT_ROOT), env.get("PYTHONPATH")) if p),
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
    """The engine for images whose entrypoint is the vLLM launcher, else the command under bash."""
    if image.get("SimEngine") and not entrypoint:
        # An ENTRYPOINT `vllm serve` puts the subcommand in the image, not in the command line.
        serve = ["serve"] if (image["Config"].get("Entrypoint") or [])[-1:] == ["serve"] else []
        return [sys.executable, "-m", "cockpit.sim.engine", *serve, *host_paths(command, mounts)]
    words = [entrypoint] if entrypoint else list(image["Config"].get("Entrypoint") or [])
    words += command
    if not words:
        raise DockerError(
            "docker: Error response from daemon: no command specified.\nSee 'docker run --help'.",
            125,
        )
    # the command reads its bind mounts where the container sees them (a real program, e.g.
    # vLLM's CPU build serving the model cache): on the node those are the mounts' sources
    return ["bash", "-c", shlex.join(host_paths(words, mounts))]


def parse_mount(spec: str) -> dict[str, str]:
    parts = spec.split(":")
    source = parts[0]
    if not source.startswith("/"):
        source = str(Path.cwd() / source)
    return {
        "Type": "bind",
        "Source": source,
        "Destination": parts[1] if len(parts) > 1 else parts[0],
        "Mode": parts[2] if len(parts) > 2 else "",
        "RW": not (len(parts) > 2 and "ro" in parts[2].split(",")),
    }


def no_image_error(ref: str) -> DockerError:
    return DockerError(
        f"Unable to find image '{ref}' locally\n"
        f"docker: Error response from daemon: No such image: {ref}\n"
        "See 'docker run --help'.",
        125,
    )


def cmd_run(state: NodeState, args: list[str]) -> int:
    options, positionals = split_options(args, RUN_VALUE_FLAGS, True)
    if not positionals:
        raise DockerError(
            "docker: 'docker run' requires at least 1 argument.\nSee 'docker run --help'.", 125
        )
    ref, command = positionals[0], positionals[1:]
    with state.locked():
        image = find_image(state.images(), ref)
        if image is None:
            raise no_image_error(ref)
        containers = state.containers()
        cid = os.urandom(32).hex()
        name = opt(options, "--name") or f"sim_{cid[:8]}"
        for other in containers:
            if other["Name"] == name:
                raise DockerError(
                    f'docker: Error response from daemon: Conflict. The container name "/{name}" '
                    f'is already in use by container "{other["Id"]}". You have to remove (or '
                    "rename) that container to be able to reuse that name.\n"
                    "See 'docker run --help'.",
                    125,
                )
        entrypoint = opt(options, "--entrypoint")
        mounts = [parse_mount(v) for v in opts(options, "-v", "--volume")]
        argv = main_argv(image, entrypoint, command, mounts)
        words = [entrypoint] if entrypoint else list(image["Config"].get("Entrypoint") or [])
        words += command
        record = {
            "Id": cid,
            "Name": name,
            "Created": now_iso(),
            "Image": image["Id"],
            "Path": words[0] if words else "",
            "Args": words[1:],
            "Config": {
                "Image": ref,
                "Env": [*env_files(opts(options, "--env-file")), *opts(options, "-e", "--env")],
                "Labels": {
                    **image["Config"]["Labels"],
                    **key_values(opts(options, "--label", "-l")),
                },
                "Cmd": command,
            },
            "Mounts": mounts,
            "HostConfig": {
                "NetworkMode": opt(options, "--network", "--net") or "bridge",
                "IpcMode": opt(options, "--ipc") or "private",
                "ShmSize": opt(options, "--shm-size") or "64m",
                "Ulimits": opts(options, "--ulimit"),
                "Gpus": opt(options, "--gpus") or "",
                "AutoRemove": "--rm" in options,
            },
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
        containers.append(record)
        state.write("containers.json", containers)
    (state.containers_dir / cid).mkdir(parents=True, exist_ok=True)
    for mount in mounts:
        Path(mount["Source"]).mkdir(parents=True, exist_ok=True)  # as the daemon does for -v
    env = container_env(state, record, image)
    workdir = opt(options, "-w", "--workdir") or str(Path.home())
    if not Path(workdir).is_dir():
        workdir = str(Path.home())
    detach = "-d" in options or "--detach" in options
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
    if answer.startswith("error:"):
        os.waitpid(child, 0)
        raise DockerError(
            "docker: Error response from daemon: failed to create task for container: "
            f"exec: {answer[6:]}: unknown.",
            127,
        )
    if detach:
        out(cid + "\n")
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
            if not force:
                err(str(no_such_container(name)))
                status = 1
            continue
        if container_state(record).get("Running"):
            if not force:
                err(
                    f'Error response from daemon: cannot remove container "/{record["Name"]}": '
                    "container is running: stop the container before removing or force remove"
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
        raise no_such_container(names[0])
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
                    "VirtualSize": dockerfmt.human_size(image["Size"]),
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


def print_inspect(objects: list[Record], template: str | None) -> None:
    if template:
        out("".join(dockerfmt.render_template(template, o) + "\n" for o in objects))
    else:
        out(json.dumps(objects, indent=4) + "\n")


def container_inspect(record: Record) -> Record:
    shown = public(record)
    shown["Name"] = "/" + record["Name"]
    shown["State"] = container_state(record)
    return shown


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
            found.append(container_inspect(record))
            continue
        image = None if kind == "container" else find_image(images, name)
        if image is not None:
            found.append(public(image))
        else:
            missing.append(name)
    if not template or found:
        print_inspect(found, template)
    for name in missing:
        if kind == "image":
            err(f"Error response from daemon: No such image: {name}")
        elif kind == "container":
            err(f"Error response from daemon: No such container: {name}")
        else:
            err(f"Error: No such object: {name}")
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
            [{"Config": config_name, "RepoTags": tags, "Layers": [f"blobs/sha256/{layer}"]}]
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
    chosen: list[Record] = []
    for ref in refs:
        image = find_image(images, ref)
        if image is None:
            raise DockerError(f"Error response from daemon: No such image: {ref}")
        chosen.append(image)
    if len(chosen) != 1:
        raise DockerError("docker save: this simulator saves exactly one image per archive")
    sink: IO[bytes] = open(target, "wb") if target else sys.stdout.buffer  # noqa: SIM115
    try:
        for piece in save_stream(chosen[0], chosen[0]["RepoTags"]):
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
            from cockpit.sim.tools.nodestate import sim_bytes

            config["RepoTags"] = tags
            config["RepoDigests"] = []
            config["SimBytes"] = sim_bytes(config["Size"])
            images.append(config)
        state.write("images.json", images)
    quiet = "-q" in options or "--quiet" in options
    if not quiet:
        out("".join(f"Loaded image: {t}\n" for t in tags) or f"Loaded image ID: {config['Id']}\n")
    return 0


def registry_path() -> Path:
    return Path(os.environ["COCKPIT_SIM_FLEET_DIR"]) / "registry.json"


def offline_error(ref: str) -> DockerError:
    host = ref.split("/", 1)[0] if "." in ref.split("/", 1)[0] else "registry-1.docker.io"
    return DockerError(
        f'Error response from daemon: Get "https://{host}/v2/": dial tcp: lookup {host}: '
        "no such host"
    )


def cmd_pull(state: NodeState, args: list[str]) -> int:
    """Pull by digest succeeds only when the registry's manifest names an image id already
    present (layers local: the digest is re-attached); anything else would need the network."""
    options, refs = split_options(args, {"--platform"}, False)
    if len(refs) != 1:
        raise DockerError('"docker pull" requires exactly 1 argument.')
    ref = refs[0]
    repo, _, digest = parse_ref(ref)
    if digest is None:
        raise offline_error(ref)
    try:
        registry = json.loads(registry_path().read_text())
    except (KeyError, FileNotFoundError):
        registry = {}
    # the registry's full `repo@sha256:…` this (possibly prefix) reference names, and its image
    full, image_id = next(
        ((name, iid) for name, iid in registry.items() if digest_matches(name, repo, digest)),
        ("", None),
    )
    with state.locked():
        images = state.images()
        image = next((i for i in images if i["Id"] == image_id), None)
        if image is None:
            raise offline_error(ref)
        already = full in image["RepoDigests"]
        if not already:
            image["RepoDigests"].append(full)
            state.write("images.json", images)
    if "-q" not in options and "--quiet" not in options:
        path = repo.split("/", 1)[1] if "." in repo.split("/", 1)[0] else repo
        status = "Image is up to date for" if already else "Downloaded newer image for"
        out(f"{digest}: Pulling from {path}\n")
        if not already:
            out(f"{image['Id'].removeprefix('sha256:')[:12]}: Already exists\n")
        out(f"Digest: {full.split('@')[1]}\nStatus: {status} {ref}\n")
    out(f"{ref}\n")
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


def cmd_rmi(state: NodeState, args: list[str]) -> int:
    options, refs = split_options(args, set(), False)
    force = "-f" in options or "--force" in options
    status = 0
    for ref in refs:
        with state.locked():
            images = state.images()
            image = find_image(images, ref)
            if image is None:
                err(f"Error response from daemon: No such image: {ref}")
                status = 1
                continue
            short = image["Id"].removeprefix("sha256:")[:12]
            repo, tag, _ = parse_ref(ref)
            by_tag = f"{repo}:{tag or 'latest'}" in image["RepoTags"]
            if by_tag and len(image["RepoTags"]) > 1:
                image["RepoTags"].remove(f"{repo}:{tag or 'latest'}")
                state.write("images.json", images)
                out(f"Untagged: {repo}:{tag or 'latest'}\n")
                continue
            users = [c for c in state.containers() if c["Image"] == image["Id"]]
            if users and not force:
                running = [c for c in users if container_state(c).get("Running")]
                which = "running" if running else "stopped"
                forced = "cannot be forced" if running else "must be forced"
                err(
                    f"Error response from daemon: conflict: unable to delete {short} ({forced}) "
                    f"- image is being used by {which} container {(running or users)[0]['Id'][:12]}"
                )
                status = 1
                continue
            state.write("images.json", [i for i in images if i["Id"] != image["Id"]])
        lines = [f"Untagged: {t}" for t in image["RepoTags"] + image["RepoDigests"]]
        out("".join(line + "\n" for line in [*lines, f"Deleted: {image['Id']}"]))
    return status


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
    command: Command | None
    if len(args) >= 2 and (args[0], args[1]) in GROUPS:
        command, rest = GROUPS[(args[0], args[1])], args[2:]
    else:
        command, rest = COMMANDS.get(args[0]), args[1:]
    if command is None:
        err(
            f"docker: unknown command: docker {args[0]}\n\nRun 'docker --help' for more information"
        )
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
