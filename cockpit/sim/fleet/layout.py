"""Where a simulated fleet keeps its files, and how its nodes are addressed.

<dir>/
  fleet-config.json   what to run (written by `SimFleet.start`, read by the daemon)
  fleet.json          what runs: nodes -> host/port, user, server kind, links (read by tools)
  fleet.pid, fleet.log, control.json (nodes held stopped), registry.json (digest -> image id)
  clusters.toml, *.toml, client_key, known_hosts   the inventory a cockpit points at
  ssh_config          `Host dgxK` blocks for an ordinary `ssh -F ssh_config dgxK`
  bin/                the node tools (docker, nvidia-smi, ssh, node-exec)
  ssh/                the fleet's internal key and known_hosts (node-to-node ssh), authorized_keys
  nodes/dgxK/         one node's state (see cockpit.sim.tools.nodestate), its identity/ (see
                      cockpit.sim.fleet.identity)
  sshd/               OpenSSH configs and pid files (server kind "openssh")
"""

from __future__ import annotations

import json
import secrets
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

ServerKind = Literal["asyncssh", "openssh"]
FIRST_OCTET = 10  # dgxK listens on <subnet>.(FIRST_OCTET + K)


def node_names(count: int) -> list[str]:
    return [f"dgx{i}" for i in range(1, count + 1)]


def node_host(name: str, subnet: str) -> str:
    return f"{subnet}.{FIRST_OCTET + int(name.removeprefix('dgx'))}"


def random_subnet() -> str:
    """A /24 of its own inside 127.0.0.0/8, so fleets running side by side (two test runs, a demo
    and a test) never share an address: their serve and rendezvous ports cannot collide."""
    return f"127.{secrets.randbelow(254) + 1}.{secrets.randbelow(256)}"


@dataclass
class FleetConfig:
    """What the daemon runs; `port` is chosen by the daemon (0 until then)."""

    nodes: int = 8
    speed: float = 1.0
    boot_speed: float | None = None
    server: ServerKind = "asyncssh"
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
    def control(self) -> Path:
        return self.root / "control.json"

    @property
    def registry(self) -> Path:
        return self.root / "registry.json"

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
