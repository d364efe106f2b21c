"""Where a simulated fleet keeps its files, and how its nodes are addressed.

<dir>/
  fleet-config.json   what to run (written by `SimFleet.start`, read by the daemon)
  fleet.json          what runs: nodes -> host/port, user, server kind, links (read by tools)
  fleet.pid, fleet.log, control.json (nodes held stopped), registry.json (digest -> image id),
  registry.down       present while the simulated registry is down
  clusters.toml, *.toml, client_key, known_hosts   the inventory a cockpit points at
  ssh_config          `Host dgxK` blocks for an ordinary `ssh -F ssh_config dgxK`
  bin/                the node tools (docker, nvidia-smi, ssh, node-exec)
  tools.sock, tools.pid   the resident service behind the first three (fleet.toolservice)
  ssh/                the fleet's internal key and known_hosts (node-to-node ssh), authorized_keys
  nodes/dgxK/         one node's state (see cockpit_sim.tools.nodestate), its identity/ (see
                      cockpit_sim.fleet.identity); with real Docker also its daemon's data (docker/)
  sshd/               OpenSSH configs and pid files (server kind "openssh")
  gpu-hook/, registry/, nas/   real Docker only: the daemons' GPU hook, the registry's storage,
                      the model and compile caches every node mounts (as the seed's NAS)
"""

from __future__ import annotations

import json
import secrets
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from cockpit_sim.tools.nodestate import REGISTRY_DOWN

ServerKind = Literal["asyncssh", "openssh"]
DockerKind = Literal["sim", "real"]
ToolsKind = Literal["service", "exec"]  # node tools: front-ends of the resident service, or
# a fresh `python -S` per call (the launchers; kept to measure against)
FIRST_OCTET = 10  # dgxK listens on <subnet>.(FIRST_OCTET + K)
MAX_NODES = 256  # one daemon, one tool service; measured in benchmarks/status_scale.py


def node_names(count: int) -> list[str]:
    return [f"dgx{i}" for i in range(1, count + 1)]


def node_host(name: str, subnet: str) -> str:
    """<subnet>.(FIRST_OCTET + K); past .255 the count goes on in the next /24 (dgx246 is
    <subnet + 1>.0), which `random_subnet` keeps for the same fleet."""
    a, b, c = subnet.split(".")
    octets = int(c) * 256 + FIRST_OCTET + int(name.removeprefix("dgx"))
    return f"{a}.{b}.{octets // 256}.{octets % 256}"


def random_subnet() -> str:
    """A /23 of its own inside 127.0.0.0/8 (named by its first /24), so fleets running side by
    side (two test runs, a demo and a test) never share an address: their serve and rendezvous
    ports cannot collide."""
    return f"127.{secrets.randbelow(254) + 1}.{2 * secrets.randbelow(128)}"


@dataclass
class FleetConfig:
    """What the daemon runs; `port` is chosen by the daemon (0 until then)."""

    nodes: int = 8
    speed: float = 1.0
    boot_speed: float | None = None
    server: ServerKind = "asyncssh"
    docker: DockerKind = "sim"  # "real": a Docker daemon per node (see docker_fleet)
    tools: ToolsKind = "service"
    recipes_dir: str = ""
    snapshots_dir: str = ""
    link_mbps: float | None = None
    links: dict[str, float] = field(default_factory=dict)
    user: str = "root"
    subnet: str = field(default_factory=random_subnet)
    owner_pid: int | None = None  # the daemon stops the fleet once this process is gone
    identity: str = "auto"  # namespaces | user-namespaces | wrappers (see fleet.namespaces)

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=1))

    @classmethod
    def load(cls, path: Path) -> FleetConfig:
        return cls(**json.loads(path.read_text()))


@dataclass(frozen=True)
class FleetLayout:
    root: Path

    @property
    def config(self) -> Path:
        return self.root / "fleet-config.json"

    @property
    def fleet_json(self) -> Path:
        return self.root / "fleet.json"

    @property
    def pid_file(self) -> Path:
        return self.root / "fleet.pid"

    @property
    def log_file(self) -> Path:
        return self.root / "fleet.log"

    @property
    def tools_pid(self) -> Path:
        return self.root / "tools.pid"

    @property
    def control(self) -> Path:
        return self.root / "control.json"

    @property
    def registry(self) -> Path:
        return self.root / "registry.json"

    @property
    def registry_down(self) -> Path:
        """Present while the simulated registry is down (see `SimFleet.set_registry`)."""
        return self.root / REGISTRY_DOWN

    @property
    def bin_dir(self) -> Path:
        return self.root / "bin"

    @property
    def ssh_dir(self) -> Path:
        return self.root / "ssh"

    @property
    def sshd_dir(self) -> Path:
        return self.root / "sshd"

    @property
    def nodes_dir(self) -> Path:
        return self.root / "nodes"

    def node_dir(self, name: str) -> Path:
        return self.nodes_dir / name

    @property
    def nas_dir(self) -> Path:
        """The caches every node of a real-Docker fleet mounts at the same absolute path."""
        return self.root / "nas"

    def read_fleet(self) -> dict[str, object]:
        try:
            return json.loads(self.fleet_json.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}

    def stopped_nodes(self) -> set[str]:
        try:
            return set(json.loads(self.control.read_text()).get("stopped", []))
        except (FileNotFoundError, json.JSONDecodeError):
            return set()
