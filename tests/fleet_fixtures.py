"""Pytest fixtures: running simulated fleets over real SSH, torn down completely after use.

- `sim_fleet`   session-scoped, 8 nodes, asyncssh endpoints (seeded state; do not break it)
- `sshd_fleet`  session-scoped, 3 nodes, Debian OpenSSH sshd (skipped without /usr/sbin/sshd)
- `small_fleet` function-scoped, 2 nodes, asyncssh: for destructive tests
- `fleet_factory(nodes=2, **SimFleet options)` function-scoped: any fleet, all stopped after
  (`docker="real"`: a Docker daemon per node; fails, never skips, when Debian's parts are missing)
- `connect(fleet, node)` an asyncssh client connection to a node (host keys checked)
- `RealDockerTrace.of(fleet)` what a real-Docker fleet runs, to check `leftovers()` after a stop
- `start_fleet(root, nodes, **options)` a started fleet (test defaults) for a fixture of any scope

Each fleet draws its own /24 inside 127.0.0.0/8 (and a port free on every node address there), so
parallel runs never share an address.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncssh
import pytest

from cockpit_sim.fleet import SimFleet
from cockpit_sim.fleet.realdocker import CGROUPS, missing_parts
from cockpit_sim.fleet.sshd import SSHD

__all__ = [
    "RealDockerTrace",
    "connect",
    "fleet_factory",
    "sim_fleet",
    "small_fleet",
    "sshd_fleet",
    "start_fleet",
]


def connect(fleet: SimFleet, node: str, **options: Any) -> Any:
    """`async with connect(fleet, "dgx1") as conn:` checked against the fleet's known_hosts."""
    host = next(n for n in fleet.nodes if n.name == node)
    options.setdefault("known_hosts", str(fleet.known_hosts))
    options.setdefault("client_keys", [str(fleet.client_key)])
    options.setdefault("username", fleet.config.user)
    options.setdefault("connect_timeout", 5)
    return asyncssh.connect(host.host, host.port, **options)


BOOT_SPEED = 200.0
"""Engines boot at least this fast in test fleets (boot phases only; serving keeps `speed`)."""


@dataclass(frozen=True)
class RealDockerTrace:
    """The socket folders and registry port of a running real-Docker fleet, taken while it runs
    (its files say so only until it stops)."""

    fleet: SimFleet
    run_dirs: tuple[Path, ...]
    registry_port: int

    @classmethod
    def of(cls, fleet: SimFleet) -> RealDockerTrace:
        docker = fleet.real_docker
        assert docker is not None, "not a real-Docker fleet"
        runs = tuple(d.run_dir for d in docker.daemons.values())
        assert all(r.is_dir() for r in runs), runs
        return cls(fleet, runs, docker.registry.port)

    def leftovers(self) -> list[str]:
        """Whatever of the fleet still exists: processes (dockerd, containerd, shims, registry,
        engines), mounts, container cgroups, socket folders, a listening registry."""
        import socket

        found = [f"process {pid}" for pid in self.fleet.leftover_processes()]
        roots = (str(self.fleet.root), *map(str, self.run_dirs))
        mounts = Path("/proc/self/mounts").read_text().splitlines()
        found += [f"mount {m.split()[1]}" for m in mounts if any(r in m for r in roots)]
        found += [
            f"cgroup {c / r.name}"
            for r in self.run_dirs
            for c in CGROUPS.iterdir()
            if (c / r.name).exists()
        ]
        found += [f"folder {r}" for r in self.run_dirs if r.exists()]
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", self.registry_port)) == 0:
                found.append(f"registry on port {self.registry_port}")
        return found


def start_fleet(root: Path, nodes: int, **options: Any) -> SimFleet:
    if options.get("docker") == "real" and missing_parts():
        pytest.fail(f"real Docker parts missing: {missing_parts()} (.ci/run installs them)")
    options.setdefault("boot_speed", max(BOOT_SPEED, options.get("speed", 1.0)))
    options.setdefault("owner_pid", os.getpid())  # a killed test run takes its fleets with it
    fleet = SimFleet(root, nodes, **options)
    try:
        fleet.start()
    except BaseException:
        fleet.stop()
        raise
    return fleet


@pytest.fixture(scope="session")
def sim_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimFleet]:
    fleet = start_fleet(tmp_path_factory.mktemp("sim-fleet"), 8)
    yield fleet
    fleet.stop()


@pytest.fixture(scope="session")
def sshd_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimFleet]:
    if not SSHD.exists():
        pytest.skip(f"{SSHD} is not installed")
    fleet = start_fleet(tmp_path_factory.mktemp("sshd-fleet"), 3, server="openssh")
    yield fleet
    fleet.stop()


@pytest.fixture
def fleet_factory(tmp_path: Path) -> Iterator[Callable[..., SimFleet]]:
    fleets: list[SimFleet] = []

    def make(nodes: int = 2, **options: Any) -> SimFleet:
        if options.get("server") == "openssh" and not SSHD.exists():
            pytest.skip(f"{SSHD} is not installed")
        fleet = start_fleet(tmp_path / f"fleet{len(fleets)}", nodes, **options)
        fleets.append(fleet)
        return fleet

    yield make
    for fleet in fleets:
        fleet.stop()


@pytest.fixture
def small_fleet(fleet_factory: Callable[..., SimFleet]) -> SimFleet:
    return fleet_factory(2)
