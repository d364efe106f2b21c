"""The Docker contract: the same commands through a simulated node's `docker` and a real daemon.

The real side is Debian's docker.io 20.10 (`Dockerd`, configured as NVIDIA's container toolkit
configures a DGX Spark's: the `nvidia` runtime and the GPU hook) with a loopback registry; the
simulated side is one provisioned node's `docker`, run with the node's environment as a session
would run it. Both hold the same images (same ids, digests, labels), so structure (keys and value
types), the texts the cockpit and its peers read (error lines, progress lines, table headers) and
exit codes are compared; values that legitimately differ (ids of containers, times, paths, pids)
are normalised explicitly. What the simulator still does not do is GAPS: each entry is proven by
a probe that sees the difference, and the manual lists exactly those entries, so the list can
neither grow silently (a new difference fails a comparison) nor go stale (a mended gap fails its
probe).

No command may make the real daemon reach beyond loopback: every image reference names the
loopback registry, so a run of a missing image asks 127.0.0.1, never Docker Hub.
"""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import tarfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cockpit.telemetry.docker_out import docker_error, lane_of, parse_ps
from cockpit_sim.fleet import realdocker
from cockpit_sim.fleet.cleanup import kill_fleet_processes
from cockpit_sim.fleet.control import PROJECT_RECIPES
from cockpit_sim.fleet.layout import FleetConfig, FleetLayout
from cockpit_sim.fleet.meminfo import refresh_meminfo
from cockpit_sim.fleet.provision import provision
from cockpit_sim.fleet.realdocker import Dockerd, Registry, import_busybox, write_hook
from cockpit_sim.tools.dockerinfo import NO_TOOLKIT_FAULT
from cockpit_sim.tools.node_exec import node_environment
from cockpit_sim.tools.nodestate import REGISTRY_DOWN, NodeState, new_image, write_json_atomic

pytestmark = pytest.mark.realdocker

MANUAL_PAGE = Path(__file__).resolve().parents[2] / "docs/simulated-fleet.md"
LABELS = {
    "cockpit.lane": "t1",
    "com.example.comma": "a,b",
    "com.example.equals": "k=v",
    "com.example.both": "a,b=c",  # reads as two labels from `docker ps`: the string is ambiguous
}

GAPS = {
    "save-layout": "`docker save` writes one layer in the OCI layout of Docker 25+ "
    "(`blobs/sha256/…`), not 20.10's legacy layout, and `docker load` reads only such archives",
    "pull-layers": "the registry holds manifests only: a pull succeeds only when the image's "
    "layers are on the node already (after `docker load`), nothing is downloaded",
    "digest-prefix": "a digest prefix of 8 or more hex digits names an image (the seed's recipes "
    "know digests by prefix), where Docker refuses it as an invalid reference",
    "no-rootfs": "a container has no file system of its own: its command and `docker exec` run "
    "on the node's, in the container's environment; a `-v` destination is there only where the "
    "command's arguments or environment name it (rewritten to the mount's source)",
    "stats-cgroup": "`docker stats` reads the processes of the container's session (CPU over "
    "0.5 s, resident memory), not its cgroup: a process that leaves the session is not counted, "
    "and network and block I/O read 0B",
    "commands": "no `build`, `create`, `start`, `restart`, `kill`, `wait`, `cp`, `commit`, "
    "`push`, `import`, `volume`, `network`, `events`, `top`, `port` or `system prune`",
}


# --------------------------------------------------------------------------------- the sides


@dataclass(frozen=True)
class Done:
    code: int
    out: str
    err: str


@dataclass
class Side:
    """One `docker` to run commands through: argv0 with env, from cwd."""

    name: str
    argv0: str
    env: dict[str, str]
    cwd: Path

    def run(self, *args: str, input: bytes | None = None, timeout: float = 60) -> Done:
        done = subprocess.run(
            [self.argv0, *args],
            input=input,
            capture_output=True,
            env=self.env,
            cwd=self.cwd,
            timeout=timeout,
            check=False,
        )
        return Done(done.returncode, done.stdout.decode(), done.stderr.decode())

    def ok(self, *args: str, input: bytes | None = None) -> str:
        done = self.run(*args, input=input)
        assert done.code == 0, f"{self.name}: docker {' '.join(args)}: {done.err}"
        return done.out

    def raw(self, *args: str) -> bytes:
        return subprocess.run(
            [self.argv0, *args], capture_output=True, env=self.env, cwd=self.cwd, check=True
        ).stdout


@dataclass(frozen=True)
class Image:
    ref: str  # REGISTRY/contract/NAME:v1
    digest_ref: str  # REGISTRY/contract/NAME@sha256:…
    id: str


@dataclass
class Pair:
    """The real daemon and the simulated node, holding the same images."""

    real: Side
    sim: Side
    daemon: Dockerd
    registry: Registry
    sim_node: Path
    fleet_dir: Path
    work: Path
    images: dict[str, Image] = field(default_factory=dict)

    @property
    def sides(self) -> tuple[Side, Side]:
        return self.real, self.sim

    def both(self, *args: str) -> tuple[Done, Done]:
        return self.real.run(*args), self.sim.run(*args)

    def image(self, name: str) -> Image:
        """An image of its own for a test (tests that delete images must not share one)."""
        if name in self.images:
            return self.images[name]
        ref = f"{self.registry.address}/contract/{name}:v1"
        image_id = import_busybox(
            self.daemon,
            ref,
            self.work,
            labels={**{k: v for k, v in LABELS.items() if k != "cockpit.lane"}, "x.name": name},
            changes=("ENV PATH=/bin", 'ENTRYPOINT ["sh", "-c"]'),
        )
        pushed = self.real.ok("push", ref)
        digest = re.search(r"digest: (sha256:[0-9a-f]{64})", pushed).group(1)  # type: ignore[union-attr]
        real = json.loads(self.real.ok("image", "inspect", ref))[0]
        record = new_image(
            repo=ref.rsplit(":", 1)[0],
            image_id=image_id,
            size_bytes=real["Size"],
            digest=digest,
            tags=[ref],
            labels=real["Config"]["Labels"],
            entrypoint=["sh", "-c"],
            created=real["Created"],
        )
        record["Config"]["Env"] = ["PATH=/bin"]
        record["Architecture"] = real["Architecture"]
        record["Comment"] = real["Comment"]
        state = NodeState(self.sim_node)
        with state.locked():
            state.write("images.json", [*state.images(), record])
        registry_file = self.fleet_dir / "registry.json"
        entries = json.loads(registry_file.read_text())
        entries[f"{ref.rsplit(':', 1)[0]}@{digest}"] = image_id
        entries[ref] = image_id
        write_json_atomic(registry_file, entries)
        image = Image(ref, f"{ref.rsplit(':', 1)[0]}@{digest}", image_id)
        self.images[name] = image
        return image

    def registry_down(self) -> None:
        """Stop the registry process (its storage stays) and mark the simulated one down."""
        pid = self.registry.pid
        assert pid is not None
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while self.registry.running() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not self.registry.running()
        (self.fleet_dir / REGISTRY_DOWN).write_text("down\n")

    def registry_up(self) -> None:
        self.registry.start()
        (self.fleet_dir / REGISTRY_DOWN).unlink(missing_ok=True)

    def remove_containers(self) -> None:
        for side in self.sides:
            ids = side.ok("ps", "-aq").split()
            if ids:
                side.run("rm", "-f", *ids)


def real_daemon(root: Path, toolkit: bool) -> Dockerd:
    """A daemon as a DGX Spark's (toolkit: the GPU hook on its PATH and the `nvidia` runtime in
    its configuration, here a stand-in that runs runc) or as a node without the toolkit."""
    bin_dir = root / "bin"
    if not toolkit:
        return Dockerd(root / "node")
    write_hook(bin_dir)
    runtime = bin_dir / "nvidia-container-runtime"
    runtime.write_text('#!/bin/sh\nexec runc "$@"\n')
    runtime.chmod(0o755)
    wrapper = bin_dir / "dockerd"
    wrapper.write_text(
        f'#!/bin/sh\nexec {realdocker.DOCKERD} --add-runtime nvidia={runtime} "$@"\n'
    )
    wrapper.chmod(0o755)
    return Dockerd(root / "node", extra_path=(bin_dir,))


def start(daemon: Dockerd, root: Path) -> None:
    """Start `daemon` through its wrapper when it has one (the toolkit's runtime flag)."""
    wrapper = root / "bin" / "dockerd"
    with pytest.MonkeyPatch.context() as patch:
        if wrapper.exists():
            patch.setattr(realdocker, "DOCKERD", str(wrapper))
        daemon.start()


def sim_node(fleet_dir: Path) -> tuple[Side, Path]:
    """One simulated node, provisioned but served by nothing: its docker run directly."""
    layout = FleetLayout(fleet_dir)
    config = FleetConfig(nodes=1, recipes_dir=str(PROJECT_RECIPES))
    fleet_dir.mkdir(parents=True, exist_ok=True)
    provision(layout, config)
    node_dir = layout.node_dir("dgx1")
    refresh_meminfo(node_dir, time.time())
    env = node_environment(str(node_dir))
    return Side("sim", str(layout.bin_dir / "docker"), env, Path(env["HOME"])), node_dir


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    if realdocker.missing_parts():
        pytest.fail(f"real Docker parts missing: {realdocker.missing_parts()} (.ci/run installs)")
    root = tmp_path_factory.mktemp("contract")
    daemon = real_daemon(root / "real", toolkit=True)
    registry = Registry(root / "registry")
    fleet_dir = root / "sim"
    try:
        start(daemon, root / "real")
        registry.start()
        sim, node_dir = sim_node(fleet_dir)
        real = Side("real", realdocker.DOCKER, {**os.environ, **daemon.env()}, root)
        yield Pair(real, sim, daemon, registry, node_dir, fleet_dir, root)
    finally:
        kill_fleet_processes(fleet_dir)
        registry.stop()
        daemon.stop()


@pytest.fixture
def clean(pair: Pair) -> Iterator[Pair]:
    """The pair with no container left after the test (and the registry up)."""
    yield pair
    pair.remove_containers()
    if not pair.registry.running():
        pair.registry_up()
    (pair.fleet_dir / REGISTRY_DOWN).unlink(missing_ok=True)


# ----------------------------------------------------------------------- comparing helpers


def shape(value: Any) -> Any:
    """Keys and value types, recursively (a list: the set of its elements' shapes)."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return ["list", *sorted({json.dumps(shape(v), sort_keys=True) for v in value})]
    return "null" if value is None else type(value).__name__


def shape_diff(real: Any, sim: Any, path: str = "") -> list[str]:
    """Where the simulator's shape differs from the real one, as `path: real … / sim …`."""
    real_shape, sim_shape = shape(real), shape(sim)
    if isinstance(real, dict) and isinstance(sim, dict):
        found = [f"{path}.{k}: only real" for k in real if k not in sim]
        found += [f"{path}.{k}: only sim" for k in sim if k not in real]
        for key in real:
            if key in sim:
                found += shape_diff(real[key], sim[key], f"{path}.{key}")
        return found
    if real_shape != sim_shape:
        return [f"{path}: real {real_shape} / sim {sim_shape}"]
    return []


DURATION = re.compile(
    r"Less than a second|About an? (minute|hour)|\d+ (seconds?|minutes|hours|days|weeks|months)"
)


def norm(text: str) -> str:
    """Ids, times and durations replaced by placeholders, table padding by one tab (a column
    is as wide as its widest value): the texts' words stay."""
    text = re.sub(r"\b[0-9a-f]{64}\b", "<id>", text)
    text = re.sub(r"\b[0-9a-f]{12}\b", "<short>", text)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z", "<time>", text)
    text = DURATION.sub("<duration>", text)
    return re.sub(r" {3,}", "\t", text)


CLIENT_WAIT = re.compile(r'^time=".*" level=error msg="error waiting for container: .*"\n', re.M)


def lines_of(done: Done) -> tuple[int, str, str]:
    """Normalised output; the real client's own race log of a failed foreground run (printed
    now and then after the daemon's error, not by the daemon) is dropped."""
    return done.code, norm(done.out), norm(CLIENT_WAIT.sub("", done.err))


def same(real: Done, sim: Done) -> None:
    assert lines_of(sim) == lines_of(real)


def run_args(pair: Pair, name: str, image: Image, script: str, *extra: str) -> list[str]:
    return ["run", "-d", "--name", name, "--network", "host", *extra, image.ref, script]


# ------------------------------------------------------------------------------- containers

LANE_RUN = (
    "--ipc", "host", "--gpus", "all", "--shm-size", "32g", "--ulimit", "nofile=1024:2048",
    "--label", "cockpit.lane=t1", "-e", "A=1",
)  # fmt: skip
# `--ulimit memlock=-1` (what the cockpit renders) needs CAP_SYS_RESOURCE, which this machine's
# root lacks: a real run fails with "error setting rlimit type 8"; nofile shows the same shape.


def test_ps_json_and_filters(clean: Pair) -> None:
    pair = clean
    image = pair.image("ps")
    for side in pair.sides:
        side.ok(*run_args(pair, "lane-t1", image, "echo hi; sleep 300", *LANE_RUN))
        side.ok(*run_args(pair, "other", image, "exit 3"))
    time.sleep(1)
    real, sim = (json.loads(s.ok("ps", "--format", "{{json .}}")) for s in pair.sides)
    assert shape_diff(real, sim) == []
    assert "_labels" not in sim
    for key in ("Names", "State", "Networks", "LocalVolumes", "Ports", "Image", "Command"):
        assert sim[key] == real[key], key
    assert sorted(sim["Labels"].split(",")) == sorted(real["Labels"].split(","))
    for key, pattern in {
        "ID": r"[0-9a-f]{12}",
        "Status": f"Up ({DURATION.pattern})",
        "RunningFor": r".* ago",
        "CreatedAt": r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+0000 UTC",
        "Size": r"0B \(virtual \d+(\.\d+)?[kM]B\)",
    }.items():
        assert re.fullmatch(pattern, sim[key]) and re.fullmatch(pattern, real[key]), key
    # the product reads the real Labels string: commas and equals inside values
    rows = {s.name: parse_ps(s.ok("ps", "-a", "--format", "{{json .}}")) for s in pair.sides}
    for found in rows.values():
        lane = next(r for r in found if r.names == "lane-t1")
        assert lane_of(lane.labels) is not None and lane_of(lane.labels).lane == "t1"
        assert lane.labels["com.example.comma"] == "a,b"
        assert lane.labels["com.example.equals"] == "k=v"
        assert (lane.labels["com.example.both"], lane.labels["b"]) == ("a", "c")
    for args in (
        ["--filter", "label=cockpit.lane"],
        ["--filter", "label=cockpit.lane=t1"],
        ["--filter", "label=cockpit.lane=t2"],
        ["--filter", "label=cockpit"],
        ["-a", "--filter", "name=^lane-t1$"],
        ["-a", "--filter", "name=^/lane"],
        ["-a", "--filter", "name=LANE"],
        ["-a", "--filter", "status=exited"],
        ["-a", "--filter", "status=running"],
        ["--filter", "status=bogus"],
        ["--filter", "bogus=1"],
    ):
        same(*pair.both("ps", *args, "--format", "{{.Names}} {{.Status}}"))
    same(*pair.both("ps", "-a", "--format", '{{.Names}}|{{.Label "com.example.both"}}'))
    same(*pair.both("ps", "--format", "table {{.Names}}\t{{.State}}"))


def test_inspect_of_a_running_container(clean: Pair) -> None:
    pair = clean
    image = pair.image("inspect")
    bind = pair.work / "bind-src"
    bind.mkdir(exist_ok=True)
    mounts = ("-v", f"{bind}:/data:ro", "-v", "named-vol:/cache", "-v", "/anonymous")
    for side in pair.sides:
        side.ok(*run_args(pair, "lane-t1", image, "sleep 300", *LANE_RUN, *mounts))
    real, sim = (json.loads(s.ok("inspect", "lane-t1"))[0] for s in pair.sides)
    assert shape_diff(real, sim) == []
    for path in (
        ("Name",), ("Path",), ("Args",), ("Image",), ("State", "Status"), ("State", "Running"),
        ("RestartCount",), ("Config", "Env"), ("Config", "Cmd"), ("Config", "Entrypoint"),
        ("Config", "Image"), ("Config", "Labels"), ("Config", "Volumes"),
        ("HostConfig", "NetworkMode"), ("HostConfig", "IpcMode"),
        ("HostConfig", "ShmSize"), ("HostConfig", "Ulimits"), ("HostConfig", "DeviceRequests"),
        ("HostConfig", "SecurityOpt"), ("HostConfig", "AutoRemove"), ("HostConfig", "Runtime"),
    ):  # fmt: skip
        assert dig(sim, path) == dig(real, path), path
    # the daemon keeps the binds in no fixed order (seen both ways on the real one)
    assert sorted(sim["HostConfig"]["Binds"]) == sorted(real["HostConfig"]["Binds"])
    assert [without_source(m) for m in sim["Mounts"]] == [
        without_source(m) for m in sorted(real["Mounts"], key=sim_mount_order(sim))
    ]
    assert list(sim["NetworkSettings"]["Networks"]) == ["host"]
    same(*pair.both("inspect", "-f", "{{json .HostConfig.Ulimits}}", "lane-t1"))
    same(*pair.both("container", "inspect", "-f", "{{.State.Status}}", "lane-t1", "nope"))
    same(*pair.both("inspect", "nope"))
    same(*pair.both("inspect", "--type", "container", "nope"))


def dig(value: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


def without_source(mount: dict[str, Any]) -> dict[str, Any]:
    """A mount with the volume's Source (under the daemon's own root) and a made-up name cut."""
    kept = {k: v for k, v in mount.items() if not (k == "Source" and mount["Type"] == "volume")}
    if re.fullmatch(r"[0-9a-f]{64}", kept.get("Name", "")):
        kept["Name"] = "<anonymous>"
    return kept


def sim_mount_order(sim: dict[str, Any]) -> Callable[[dict[str, Any]], int]:
    order = [m["Destination"] for m in sim["Mounts"]]
    return lambda m: order.index(m["Destination"])


def test_run_errors(clean: Pair) -> None:
    pair = clean
    image = pair.image("run")
    base = ["run", "--rm", "--network", "host"]
    # an image the registry does not hold
    same(*pair.both(*base, f"{pair.registry.address}/contract/nope:1", "true"))
    # usage errors and malformed flags
    same(*pair.both("run"))
    for flag in (["--gpus", "bogus"], ["--ulimit", "bogus=1"], ["--shm-size", "1x"]):
        same(*pair.both(*base, *flag, image.ref, "true"))
    # a relative source: a named volume; one with a slash is refused; an absolute one is made
    for side in pair.sides:
        side.ok("run", "-d", "--name", "rel", "--network", "host", "-v", "hf-cache:/x",
                image.ref, "sleep 300")  # fmt: skip
    real_m, sim_m = (
        json.loads(s.ok("inspect", "-f", "{{json .Mounts}}", "rel")) for s in pair.sides
    )
    assert [without_source(m) for m in sim_m] == [without_source(m) for m in real_m]
    assert sim_m[0]["Type"] == "volume" and not any(Path(sim_m[0]["Source"]).iterdir())
    same(*pair.both(*base, "-v", "vllm-cache/x:/y", image.ref, "true"))
    same(*pair.both(*base, "-v", "hf:relative", image.ref, "true"))
    for side in pair.sides:
        made = pair.work / f"made-by-{side.name}" / "sub"
        side.ok(*base, "-v", f"{made}:/z", image.ref, "true")
        assert made.is_dir()
    # a name already taken, a program the image does not have (the container stays, created)
    same(*pair.both("run", "-d", "--name", "rel", "--network", "host", image.ref, "true"))
    missing = ("run", "-d", "--name", "noexec", "--network", "host", "--entrypoint", "nosuchcmd")
    same(*pair.both(*missing, image.ref))
    same(*pair.both("ps", "-a", "--filter", "name=noexec", "--format", "{{.Status}}"))
    same(*pair.both("inspect", "-f", "{{.State.ExitCode}} {{.State.Error}}", "noexec"))


def test_gpus_without_the_container_toolkit(clean: Pair, tmp_path: Path) -> None:
    pair = clean
    image = pair.image("gpus")
    bare = real_daemon(tmp_path / "bare", toolkit=False)
    bare.start()
    state = NodeState(pair.sim_node)
    try:
        saved = pair.work / "gpus.tar"
        pair.real.ok("save", "-o", str(saved), image.ref)
        bare_side = Side("real", realdocker.DOCKER, {**os.environ, **bare.env()}, tmp_path)
        bare_side.ok("load", "-i", str(saved))
        with state.locked():
            state.write("node.json", {**state.facts(), "faults": {NO_TOOLKIT_FAULT: True}})
        args = ["run", "-d", "--name", "gpu", "--network", "host", "--gpus", "all", image.ref]
        real, sim = bare_side.run(*args, "true"), pair.sim.run(*args, "true")
        same(
            bare_side.run("run", "--name", "g", image.ref),
            pair.sim.run("run", "--name", "g", image.ref),
        )
        same(real, sim)
        assert real.code == 125
        listed = ("ps", "-a", "--format", "{{.Names}} {{.Status}}")
        assert norm(pair.sim.ok(*listed)) == norm(bare_side.ok(*listed)) == "gpu Created\n"
        rm = ("run", "--rm", "--network", "host", "--gpus", "all", image.ref, "true")
        same(bare_side.run(*rm), pair.sim.run(*rm))
        runtimes = ("info", "--format", "{{json .Runtimes}}")
        assert (
            json.loads(pair.sim.ok(*runtimes)).keys() == json.loads(bare_side.ok(*runtimes)).keys()
        )
    finally:
        with state.locked():
            state.write("node.json", {**state.facts(), "faults": {}})
        bare.stop()
    runtimes = ("info", "--format", "{{json .Runtimes}}")
    real_rt, sim_rt = (json.loads(s.ok(*runtimes)) for s in pair.sides)
    assert sim_rt.keys() == real_rt.keys() and "nvidia" in sim_rt


def test_run_by_digest_after_load_needs_the_registry(clean: Pair) -> None:
    """The seed's trap as a real daemon springs it: up, the run pulls the manifest by itself
    (and the digest is back); down, exit 125 and the registry's connection error."""
    pair = clean
    image = pair.image("bydigest")
    for down in (False, True):
        for side in pair.sides:
            archive = side.raw("save", image.digest_ref)
            assert side.ok("rmi", "-f", image.id).count("Deleted:") == 2
            assert norm(side.ok("load", input=archive)) == "Loaded image ID: sha256:<id>\n"
            shown = json.loads(side.ok("image", "inspect", image.id))[0]
            assert (shown["RepoTags"], shown["RepoDigests"]) == ([], [])
        if down:
            pair.registry_down()
        real, sim = pair.both("run", "--rm", "--network", "host", image.digest_ref, "true")
        same(real, sim)
        assert real.code == (125 if down else 0)
        assert real.err.startswith(f"Unable to find image '{image.digest_ref}' locally\n")
        if down:
            assert "connect: connection refused" in real.err
            same(*pair.both("pull", image.digest_ref))
            pair.registry_up()
        for side in pair.sides:
            shown = json.loads(side.ok("image", "inspect", image.id))[0]
            assert shown["RepoDigests"] == ([] if down else [image.digest_ref]), side.name
        for side in pair.sides:  # the tag back, for the next round
            side.ok("tag", image.id, image.ref)


def test_logs_follow_with_timestamps(clean: Pair) -> None:
    pair = clean
    image = pair.image("logs")
    script = "for i in 1 2 3; do echo out$i; sleep 0.1; echo err$i >&2; sleep 0.1; done; exit 4"
    results = {}
    for side in pair.sides:
        side.ok(*run_args(pair, "follow", image, script))
        results[side.name] = side.run("logs", "-f", "--timestamps", "follow", timeout=20)
        state = json.loads(side.ok("inspect", "-f", "{{json .State}}", "follow"))
        assert (state["Status"], state["ExitCode"]) == ("exited", 4)
    real, sim = results["real"], results["sim"]
    same(real, sim)
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z "
    assert re.fullmatch(f"({stamp}out\\d\n){{3}}", sim.out)
    assert re.fullmatch(f"({stamp}err\\d\n){{3}}", sim.err)
    same(*pair.both("logs", "nope"))
    same(*pair.both("logs", "--tail", "1", "follow"))


def test_save_load_pull_tag_rmi(clean: Pair) -> None:
    pair = clean
    image = pair.image("images")
    repo = image.ref.rsplit(":", 1)[0]
    for side in pair.sides:  # a save by tag carries the tag
        archive = side.raw("save", image.ref)
        side.ok("rmi", image.ref)
        assert side.ok("load", input=archive) == f"Loaded image: {image.ref}\n"
    same(*pair.both("pull", image.digest_ref))
    same(*pair.both("pull", image.digest_ref))  # up to date
    same(*pair.both("pull", "-q", image.digest_ref))
    same(*pair.both("pull", f"{repo}@sha256:{'0' * 64}"))
    same(*pair.both("pull"))
    same(*pair.both("images", "--digests", repo))
    real, sim = (
        [json.loads(line) for line in s.ok("images", "--digests", "--format", "{{json .}}",
                                           repo).splitlines()]
        for s in pair.sides
    )  # fmt: skip
    assert shape_diff(real, sim) == []
    for key in ("Repository", "Tag", "Digest", "ID", "Size", "VirtualSize"):
        assert [r[key] for r in sim] == [r[key] for r in real], key
    real_i, sim_i = (json.loads(s.ok("image", "inspect", image.ref)) for s in pair.sides)
    assert shape_diff(real_i, sim_i) == []
    for key in ("Id", "RepoTags", "RepoDigests", "Size", "VirtualSize", "Config", "Created"):
        assert sim_i[0][key] == real_i[0][key], key
    same(*pair.both("image", "inspect", "nope:1"))
    same(*pair.both("image", "inspect", "-f", "{{.Id}}", "nope:1"))
    same(*pair.both("tag", image.ref, f"{repo}:extra"))
    same(*pair.both("tag", "nope:1", f"{repo}:x"))
    same(*pair.both("rmi", f"{repo}:extra"))
    same(*pair.both("rmi", "nope:1"))
    same(*pair.both("save", "nope:1"))
    for side in pair.sides:
        side.ok(*run_args(pair, "user", image, "sleep 300"))
    same(*pair.both("rmi", image.id))
    for side in pair.sides:
        side.ok("stop", "-t", "0", "user")
    same(*pair.both("rmi", image.id))
    same(*pair.both("rmi", "-f", image.id))
    pair.images.pop("images")


def test_info_and_version(clean: Pair) -> None:
    pair = clean
    real, sim = (json.loads(s.ok("info", "--format", "{{json .}}")) for s in pair.sides)
    # this daemon runs without IP forwarding (no bridge here) and warns of it; a node does not
    assert real.pop("Warnings") == ["WARNING: IPv4 forwarding is disabled"]
    assert sim.pop("Warnings") is None
    assert shape_diff(real, sim) == []
    for key in ("ServerVersion", "Driver", "CgroupVersion", "DefaultRuntime", "OSType"):
        assert sim[key] == real[key], key
    real_t, sim_t = (s.ok("info") for s in pair.sides)
    assert labels_of(sim_t) == labels_of(real_t)
    real_v, sim_v = (json.loads(s.ok("version", "--format", "{{json .}}")) for s in pair.sides)
    assert shape_diff(real_v, sim_v) == []
    assert labels_of(pair.sim.ok("version")) == labels_of(pair.real.ok("version"))
    same(*pair.both("version", "--format", "{{.Server.Version}}"))
    same(*pair.both("--version"))
    same(*pair.both("bogus"))


def labels_of(text: str) -> list[str]:
    """The `Key:` words of an indented report, in order (values cut)."""
    return [re.sub(r":.*", ":", line) for line in text.splitlines() if line.strip()]


def test_stats_and_exec(clean: Pair) -> None:
    pair = clean
    image = pair.image("exec")
    for side in pair.sides:
        side.ok(*run_args(pair, "busy", image, "sleep 300", "-e", "A=1", "-w", "/tmp"))
        side.ok(*run_args(pair, "done", image, "true"))
    time.sleep(1)
    real, sim = pair.both("stats", "--no-stream")
    assert (sim.code, norm(sim.out.splitlines()[0])) == (real.code, norm(real.out.splitlines()[0]))
    rows = {}
    for side in pair.sides:
        rows[side.name] = [
            json.loads(line) for line in side.ok("stats", "--no-stream", "--format",
                                                 "{{json .}}").splitlines()
        ]  # fmt: skip
    assert shape_diff(rows["real"], rows["sim"]) == []
    for row in (*rows["real"], *rows["sim"]):
        assert row["Name"] == "busy" and re.fullmatch(r"\d+\.\d\d%", row["CPUPerc"])
        assert re.fullmatch(r"[\d.]+[KMG]?i?B / [\d.]+GiB", row["MemUsage"])
        assert row["NetIO"] == "0B / 0B" and int(row["PIDs"]) >= 1  # the node's sh forks
    same(*pair.both("stats", "--no-stream", "--format", "{{.Name}} {{.NetIO}}", "done"))
    same(*pair.both("stats", "--no-stream", "nope"))
    same(*pair.both("exec", "-e", "B=2", "busy", "sh", "-c", "echo $A $B; pwd; echo e >&2; exit 3"))
    same(*pair.both("exec", "-w", "/", "busy", "sh", "-c", "pwd"))
    same(*pair.both("exec", "busy", "nosuchcmd"))
    same(*pair.both("exec", "done", "true"))
    same(*pair.both("exec", "nope", "true"))
    same(*pair.both("exec", "busy"))
    assert pair.sim.run("exec", "-d", "busy", "sleep", "300").code == 0
    assert pair.real.run("exec", "-d", "busy", "sleep", "300").code == 0
    for side in pair.sides:
        side.ok("stop", "-t", "0", "busy")
    pids = [p for p in Path(pair.sim_node, "containers").glob("*/exec.pids")]
    for path in pids:  # what exec started ended with the container
        for pid in path.read_text().split():
            assert (
                not Path(f"/proc/{pid}").exists() or " Z " in Path(f"/proc/{pid}/stat").read_text()
            )


def test_stop_and_rm_errors(clean: Pair) -> None:
    pair = clean
    image = pair.image("rm")
    for side in pair.sides:
        side.ok(*run_args(pair, "up", image, "sleep 300"))
    same(*pair.both("rm", "up"))
    same(*pair.both("rm", "nope"))
    same(*pair.both("rm", "-f", "nope"))
    same(*pair.both("stop", "nope"))
    same(*pair.both("rm", "-f", "up"))


def test_launch_reads_the_daemons_reason(clean: Pair) -> None:
    """`docker run`'s last stderr line is the help hint: the cockpit reports the reason."""
    pair = clean
    for side in pair.sides:
        failed = side.run("run", "--rm", "--network", "host", "-v", "a/b:/x",
                          pair.image("reason").ref, "true")  # fmt: skip
        assert failed.err.rstrip().endswith("See 'docker run --help'.")
        assert docker_error(failed.err, "docker run failed").startswith(
            'create a/b: "a/b" includes invalid characters for a local volume name'
        )


# -------------------------------------------------------------------------------------- gaps


def probe_save_layout(pair: Pair) -> None:
    image = pair.image("gap")
    names = {}
    for side in pair.sides:
        with tarfile.open(fileobj=io.BytesIO(side.raw("save", image.ref))) as archive:
            names[side.name] = sorted(archive.getnames())
    assert any(n.endswith("/layer.tar") for n in names["real"])
    assert any(n.startswith("blobs/sha256/") for n in names["sim"])


def probe_pull_layers(pair: Pair) -> None:
    image = pair.image("gap-pull")
    for side in pair.sides:
        side.ok("rmi", "-f", image.ref, image.digest_ref)
    real, sim = pair.both("pull", image.digest_ref)
    assert real.code == 0 and sim.code == 1 and "holds manifests only" in sim.err
    pair.images.pop("gap-pull")


def probe_digest_prefix(pair: Pair) -> None:
    image = pair.image("gap")
    short = image.digest_ref[: image.digest_ref.index("@") + len("@sha256:") + 8]
    real, sim = pair.both("image", "inspect", "-f", "{{.Id}}", short)
    assert real.code == 1 and "invalid reference format" in real.err
    assert (sim.code, sim.out) == (0, f"{image.id}\n")


def probe_no_rootfs(pair: Pair) -> None:
    image = pair.image("gap")
    args = ["run", "--rm", "--network", "host", "-v", "probe-vol:/contract-probe", image.ref]
    real, sim = pair.both(*args, "ls / | busybox grep -qx contract-probe")
    assert (real.code, sim.code) == (0, 1)


def probe_stats_cgroup(pair: Pair) -> None:
    image = pair.image("gap")
    script = "busybox setsid busybox sleep 60 & exec busybox sleep 60"
    for side in pair.sides:
        side.ok(*run_args(pair, "escaped", image, script))
    time.sleep(1)
    real, sim = (
        json.loads(s.ok("stats", "--no-stream", "--format", "{{json .}}", "escaped"))
        for s in pair.sides
    )
    assert (real["PIDs"], sim["PIDs"]) == ("2", "1")


def probe_commands(pair: Pair) -> None:
    for command in ("build", "create", "start", "restart", "kill", "wait", "cp", "commit",
                    "push", "import", "volume", "network", "events", "top", "port"):  # fmt: skip
        real, sim = pair.both(command, "--help")
        assert real.code == 0, command
        assert (sim.code, sim.err) == (1, f"docker: '{command}' is not a docker command.\n"
                                          "See 'docker --help'\n"), command  # fmt: skip
    real, sim = pair.both("system", "prune", "--help")
    assert real.code == 0 and sim.code == 1


PROBES: dict[str, Callable[[Pair], None]] = {
    "save-layout": probe_save_layout,
    "pull-layers": probe_pull_layers,
    "digest-prefix": probe_digest_prefix,
    "no-rootfs": probe_no_rootfs,
    "stats-cgroup": probe_stats_cgroup,
    "commands": probe_commands,
}


@pytest.mark.parametrize("gap", sorted(GAPS))
def test_each_gap_is_still_a_difference(clean: Pair, gap: str) -> None:
    PROBES[gap](clean)


def test_the_gap_list_is_the_documented_one() -> None:
    """The manual's list of what the simulated docker does not do is exactly GAPS (printed)."""
    assert PROBES.keys() == GAPS.keys()
    text = MANUAL_PAGE.read_text()
    section = text[text.index("What the simulated `docker` does not do") :]
    documented = re.findall(r"^- (.+(?:\n  .+)*)", section.split("\n\n", 2)[1], re.M)
    print("\nthe simulated docker does not do:\n" + "\n".join(f"- {g}" for g in GAPS.values()))
    assert [" ".join(d.split()) for d in documented] == list(GAPS.values())
