"""`SimFleet`: start, stop and poke a simulated fleet running in its own background process.

The fleet runs detached (`python -m cockpit_sim.fleet.daemon DIR`) so that it outlives the CLI
that started it (`cockpit sim up`) and so that tests' event loops never host its servers.
"""

from __future__ import annotations

import contextlib
import getpass
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import platformdirs

from cockpit.assets import asset_dir
from cockpit.errors import EXIT_REFUSED, CockpitError
from cockpit.pids import pid_exists
from cockpit_sim.fleet.cleanup import fleet_processes, holder_processes, kill_fleet_processes
from cockpit_sim.fleet.docker_fleet import DockerFleet
from cockpit_sim.fleet.layout import (
    DockerKind,
    FleetConfig,
    FleetLayout,
    ServerKind,
    node_host,
    node_names,
)
from cockpit_sim.tools.launchers import pythonpath
from cockpit_sim.tools.nodestate import NodeState, Record, pid_alive, write_json_atomic

PROJECT_RECIPES = asset_dir("recipes")


class FleetError(CockpitError):
    """The simulated fleet could not be started, reached or stopped."""


class FleetRefusal(FleetError):
    """A request the fleet as it stands cannot take (no fleet there, an unknown node): exit 2,
    as every refusal; 1 stays for a fleet that failed."""

    exit_code = EXIT_REFUSED


def default_dir() -> Path:
    """Where `cockpit sim up` puts a fleet without --dir: the user runtime (or state) dir."""
    try:
        base = Path(platformdirs.user_runtime_dir("cockpit"))
        base.mkdir(parents=True, exist_ok=True)
    except OSError:
        base = Path(platformdirs.user_state_dir("cockpit"))
    return base / "sim"


@dataclass(frozen=True)
class SimNode:
    name: str
    host: str
    port: int


class SimFleet:
    """A simulated fleet in `root`: N nodes dgx1..dgxN, one loopback SSH endpoint each."""

    def __init__(
        self,
        root: Path,
        nodes: int = 8,
        *,
        speed: float = 1.0,
        boot_speed: float | None = None,
        server: ServerKind = "asyncssh",
        docker: DockerKind = "sim",
        recipes_dir: Path = PROJECT_RECIPES,
        snapshots_dir: Path | None = None,
        link_mbps: float | None = None,
        links: dict[str, float] | None = None,
        owner_pid: int | None = None,
        identity: str = "auto",
    ) -> None:
        self.layout = FleetLayout(Path(root).resolve())
        self.config = FleetConfig(
            nodes=nodes,
            speed=speed,
            boot_speed=boot_speed,
            server=server,
            docker=docker,
            recipes_dir=str(Path(recipes_dir).resolve()),
            snapshots_dir=str(Path(snapshots_dir).resolve()) if snapshots_dir else "",
            link_mbps=link_mbps,
            links=dict(links or {}),
            owner_pid=owner_pid,
            user=getpass.getuser(),
            identity=identity,
        )

    @classmethod
    def attach(cls, root: Path) -> SimFleet:
        """The fleet already provisioned in `root` (e.g. by `cockpit sim up`)."""
        layout = FleetLayout(Path(root).resolve())
        if not layout.config.is_file():
            raise FleetRefusal(f"no simulated fleet in {root} (run `cockpit sim up --dir {root}`)")
        fleet = cls(layout.root)
        fleet.config = FleetConfig.load(layout.config)
        return fleet

    # ------------------------------------------------------------------ facts

    @property
    def root(self) -> Path:
        return self.layout.root

    @property
    def inventory_dir(self) -> Path:
        """Folder with clusters.toml, recipes, client_key, known_hosts (for `--inventory`)."""
        return self.layout.root

    @property
    def names(self) -> list[str]:
        return node_names(self.config.nodes)

    @property
    def port(self) -> int:
        return int(self.layout.read_fleet().get("port", 0))  # type: ignore[call-overload]

    @property
    def nodes(self) -> list[SimNode]:
        return [SimNode(n, node_host(n, self.config.subnet), self.port) for n in self.names]

    @property
    def identity_mode(self) -> str:
        """How the nodes get their identity: namespaces, user-namespaces or wrappers."""
        return str(self.layout.read_fleet().get("identity", ""))

    @property
    def ssh_config(self) -> Path:
        return self.layout.root / "ssh_config"

    @property
    def client_key(self) -> Path:
        return self.layout.root / "client_key"

    @property
    def known_hosts(self) -> Path:
        return self.layout.root / "known_hosts"

    def node_dir(self, name: str) -> Path:
        self._check(name)
        return self.layout.node_dir(name)

    @property
    def real_docker(self) -> DockerFleet | None:
        """The nodes' Docker daemons and the registry (a fleet started with docker="real")."""
        return DockerFleet(self.layout, self.names) if self.config.docker == "real" else None

    def pid(self) -> int | None:
        try:
            pid = int(self.layout.pid_file.read_text())
        except (FileNotFoundError, ValueError):
            return None
        return pid if pid_alive(pid) else None

    def status(self) -> dict[str, object]:
        try:
            return json.loads((self.layout.root / "status.json").read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}

    @property
    def running(self) -> bool:
        return self.pid() is not None and bool(self.status().get("ready"))

    # -------------------------------------------------------------- lifecycle

    def start(self, timeout: float | None = None) -> SimFleet:
        """Provision and start the fleet in the background; return once every node answers
        (default timeout: 60 s, 180 s with real Docker: daemons, registry, image builds)."""
        timeout = timeout or (180.0 if self.config.docker == "real" else 60.0)
        if self.pid() is not None:
            raise FleetRefusal(f"a simulated fleet already runs in {self.root} (pid {self.pid()})")
        self.layout.root.mkdir(parents=True, exist_ok=True)
        for stale in ("status.json", "control.json", "fleet.json", "registry.down"):
            (self.layout.root / stale).unlink(missing_ok=True)
        self.config.save(self.layout.config)
        env = dict(os.environ)
        env["PYTHONPATH"] = pythonpath(env.get("PYTHONPATH"))
        with open(self.layout.log_file, "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "cockpit_sim.fleet.daemon", str(self.root)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=env,
                start_new_session=True,
                cwd=self.root,
            )
        deadline = time.monotonic() + timeout
        while not self.status().get("ready"):
            if proc.poll() is not None:
                raise FleetError(f"the simulated fleet failed to start:\n{self._log_tail()}")
            if time.monotonic() > deadline:
                self._terminate(proc.pid)
                raise FleetError(f"the simulated fleet did not start within {timeout:.0f}s")
            time.sleep(0.05)
        return self

    def stop(self, timeout: float | None = None) -> None:
        """Stop the servers and every process the fleet started (with real Docker: every
        container, daemon, registry and mount, also when the fleet's daemon was killed);
        idempotent."""
        docker = self.real_docker
        pid = self.pid()
        if pid is not None:
            self._terminate(pid, timeout or (60.0 if docker else 15.0))
        if docker is not None:
            docker.stop()
        kill_fleet_processes(self.root)
        for name in self.names:
            node_dir = self.layout.node_dir(name)
            if (node_dir / "containers.json").exists():
                _mark_containers_exited(NodeState(node_dir))
        (self.layout.root / "status.json").unlink(missing_ok=True)
        self.layout.pid_file.unlink(missing_ok=True)

    def _terminate(self, pid: int, timeout: float = 15.0) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if pid_alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)

    def leftover_processes(self) -> list[int]:
        """Processes started on the fleet that still run (empty after `stop`)."""
        return fleet_processes(self.root)

    def processes(self) -> list[int]:
        """Everything of the fleet that runs now: its daemon, the nodes' namespace holders,
        what runs on the nodes (sessions, containers)."""
        pid = self.pid()
        return [*([pid] if pid else []), *holder_processes(self.root), *self.leftover_processes()]

    @staticmethod
    def wait_reaped(pids: list[int], timeout: float) -> list[int]:
        """Wait until none of `pids` is in the process table any more (an exited process stays
        there as a zombie until its parent, often init, reaps it); returns those still listed."""
        deadline = time.monotonic() + timeout
        while (listed := [p for p in pids if pid_exists(p)]) and time.monotonic() < deadline:
            time.sleep(0.05)
        return listed

    def _log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.layout.log_file.read_text().splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"

    def __enter__(self) -> SimFleet:
        return self.start() if not self.running else self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -------------------------------------------------------------- node control

    def _check(self, name: str) -> None:
        if name not in self.names:
            raise FleetRefusal(f"unknown node {name!r} (fleet has {', '.join(self.names)})")

    def _set_stopped(self, name: str, stopped: bool, timeout: float) -> None:
        self._check(name)
        pid = self.pid()
        if pid is None:
            raise FleetRefusal(f"no simulated fleet runs in {self.root}")
        wanted = self.layout.stopped_nodes()
        wanted = wanted | {name} if stopped else wanted - {name}
        generation = int(self.status().get("generation", 0)) + 1  # type: ignore[call-overload]
        write_json_atomic(
            self.layout.control, {"stopped": sorted(wanted), "generation": generation}
        )
        os.kill(pid, signal.SIGHUP)
        deadline = time.monotonic() + timeout
        while int(self.status().get("generation", -1)) < generation:  # type: ignore[call-overload]
            if time.monotonic() > deadline:
                raise FleetError(f"the fleet did not apply the change to {name} in {timeout}s")
            time.sleep(0.02)

    def stop_node(self, name: str, timeout: float = 10.0) -> None:
        """Take the node's SSH endpoint down (connections dropped; containers keep running)."""
        self._set_stopped(name, True, timeout)

    def start_node(self, name: str, timeout: float = 10.0) -> None:
        self._set_stopped(name, False, timeout)

    # -------------------------------------------------------------- registry

    def set_registry(self, up: bool) -> None:
        """Bring the simulated registry up or take it down: while it is down every node's
        `docker pull`, and a `docker run` that needs a manifest, fails as on a real node whose
        registry does not answer."""
        if up:
            self.layout.registry_down.unlink(missing_ok=True)
        else:
            self.layout.registry_down.write_text("down\n")

    @property
    def registry_up(self) -> bool:
        return not self.layout.registry_down.exists()

    # -------------------------------------------------------------- node state

    def set_fault(self, node: str, fault: str, on: bool = True) -> None:
        """Switch a named fault in the node's node.json (read by the simulated engine)."""
        state = NodeState(self.node_dir(node))
        with state.locked():
            facts = state.facts()
            faults = dict(facts.get("faults", {}))
            if on:
                faults[fault] = True
            else:
                faults.pop(fault, None)
            facts["faults"] = faults
            state.write("node.json", facts)

    def snapshot_dir(self, node: str, repo: str) -> Path:
        """The node's snapshot folder of model `repo` (the one revision it holds)."""
        model = self.node_dir(node) / "hf-cache" / "hub" / ("models--" + repo.replace("/", "--"))
        snapshots = sorted((model / "snapshots").glob("*"))
        if not snapshots:
            raise FleetRefusal(f"{node} has no snapshot of {repo}")
        return snapshots[0]

    def corrupt_snapshot(self, node: str, repo: str) -> Path:
        """Make the node's copy of `repo` differ (config.json altered); returns the file."""
        snapshot = self.snapshot_dir(node, repo)
        target = snapshot / "config.json"
        if not target.is_file():
            target = next(p for p in sorted(snapshot.rglob("*")) if p.is_file())
        with open(target, "ab") as handle:
            handle.write(b"\n")
        return target

    def corrupt_image(self, node: str, repo: str | None = None) -> str:
        """Make the node's image held by digest (of `repo`, else the first) another image: same
        RepoDigests and tags, another id, as when a digest points to a wrong image on a node.
        Returns the new id."""
        state = NodeState(self.node_dir(node))
        with state.locked():
            images = state.images()
            image = next(
                (i for i in images if i["RepoDigests"] and (repo is None or any(
                    d.split("@")[0] == repo for d in i["RepoDigests"]))),
                None,
            )  # fmt: skip
            if image is None:
                raise FleetRefusal(f"{node} holds no image by digest{f' of {repo}' * bool(repo)}")
            wrong = "sha256:" + hashlib.sha256(f"corrupt:{image['Id']}".encode()).hexdigest()
            image["Id"] = wrong
            state.write("images.json", images)
        return wrong

    def images(self, node: str) -> list[Record]:
        return NodeState(self.node_dir(node)).images()

    def add_image(self, node: str, image: Record) -> None:
        """Put an image record (see nodestate.new_image) on a node."""
        state = NodeState(self.node_dir(node))
        with state.locked():
            images = [i for i in state.images() if i["Id"] != image["Id"]]
            state.write("images.json", [*images, image])

    def remove_image(self, node: str, image_id: str) -> None:
        state = NodeState(self.node_dir(node))
        with state.locked():
            state.write("images.json", [i for i in state.images() if i["Id"] != image_id])


def _mark_containers_exited(state: NodeState) -> None:
    """After a teardown killed them, record the containers as exited (SIGKILL: 137)."""
    with state.locked():
        containers = state.containers()
        for record in containers:
            if record["State"].get("Running"):
                record["State"].update(Status="exited", Running=False, Pid=0, ExitCode=137)
        state.write("containers.json", containers)
