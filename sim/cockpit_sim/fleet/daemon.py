"""The background process of a simulated fleet: provisions it and serves its SSH endpoints.

`python -m cockpit_sim.fleet.daemon DIR` reads DIR/fleet-config.json, picks one port free on every
node address, starts the node tool service and an endpoint per node, writes the inventory, then
reports readiness in DIR/status.json. With real Docker it first starts a daemon per node and the
registry and builds the lane images (`docker_fleet`). SIGHUP re-reads DIR/control.json (nodes held
stopped); SIGTERM stops every endpoint, the tool service, every Docker daemon and every process the
fleet started.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import signal
import socket
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Protocol

from cockpit.pids import pid_exists
from cockpit_sim.fleet.cleanup import kill_fleet_processes
from cockpit_sim.fleet.docker_fleet import DockerFleet
from cockpit_sim.fleet.endpoint import AsyncsshEndpoint
from cockpit_sim.fleet.lane_images import LaneImage
from cockpit_sim.fleet.layout import FleetConfig, FleetLayout, node_host, node_names
from cockpit_sim.fleet.meminfo import refresh_meminfo
from cockpit_sim.fleet.namespaces import NodeNamespaces
from cockpit_sim.fleet.procstat import BOOT_JIFFIES, USER_HZ, CpuCounters, refresh_stat
from cockpit_sim.fleet.provision import image_specs, node_env, provision, write_inventory
from cockpit_sim.fleet.sshd import OpensshEndpoint
from cockpit_sim.fleet.toolservice import ToolService
from cockpit_sim.tools.node_exec import node_environment
from cockpit_sim.tools.nodestate import write_json_atomic

PORT_ATTEMPTS = 8
MEMINFO_EVERY_S = 1.0


class Endpoint(Protocol):
    @property
    def running(self) -> bool: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


def pick_port(hosts: list[str]) -> int:
    """A port that is free on every one of `hosts` right now (bind-probed)."""
    for _ in range(50):
        with ExitStack() as stack:
            first = stack.enter_context(socket.socket())
            first.bind((hosts[0], 0))
            port = first.getsockname()[1]
            try:
                for host in hosts[1:]:
                    stack.enter_context(socket.socket()).bind((host, port))
            except OSError:
                continue
            return port
    raise OSError("no port is free on every node address")


class FleetDaemon:
    def __init__(self, root: Path) -> None:
        self.layout = FleetLayout(root)
        self.config = FleetConfig.load(self.layout.config)
        self.names = node_names(self.config.nodes)
        self.cpu: dict[str, CpuCounters] = {}  # each node's CPU counters (its /proc/stat)
        self.boot_time = int(time.time() - BOOT_JIFFIES / USER_HZ)
        self.endpoints: dict[str, Endpoint] = {}
        self.generation = 0
        self.docker = DockerFleet(self.layout, self.names) if self.config.docker == "real" else None
        self.tools = ToolService(self.layout) if self.config.tools == "service" else None
        self.namespaces = NodeNamespaces(self.layout, self.names, self.config.identity)

    def _endpoint(self, name: str, port: int) -> Endpoint:
        node_dir = self.layout.node_dir(name)
        if self.config.server == "openssh":
            return OpensshEndpoint(
                name, node_host(name, self.config.subnet), port, node_dir, self.layout.root
            )
        return AsyncsshEndpoint(
            node_host(name, self.config.subnet),
            port,
            node_dir / "ssh" / "ssh_host_ed25519_key",
            self.layout.ssh_dir / "authorized_keys",
            node_environment(str(node_dir)),
        )

    async def start_docker(self) -> list[LaneImage]:
        """The nodes' daemons and the registry up, the lane images built and seeded."""
        assert self.docker is not None
        hosts = {n: d.host for n, d in self.docker.daemons.items()}
        envs = {n: node_env(self.layout, self.config, n, hosts[n]) for n in self.names}
        await asyncio.to_thread(self.docker.start, envs)
        specs = image_specs(Path(self.config.recipes_dir), self.names)
        return await asyncio.to_thread(self.docker.seed, specs)

    async def start(self) -> None:
        if self.docker is not None:  # a fleet killed earlier in this folder may have left some
            await asyncio.to_thread(self.docker.stop)
        host_keys = provision(self.layout, self.config, self.docker)
        self.refresh_meminfo()  # the namespaces bind it; the first probe reads it
        mode = self.namespaces.start()
        if self.namespaces.problem:
            print(f"node identity: {self.namespaces.problem}; mode {mode}", file=sys.stderr)
        if self.tools is not None:
            await self.tools.start()
        lane_images = await self.start_docker() if self.docker is not None else None
        for attempt in range(PORT_ATTEMPTS):
            port = pick_port([node_host(n, self.config.subnet) for n in self.names])
            self.endpoints = {n: self._endpoint(n, port) for n in self.names}
            try:
                await asyncio.gather(*(e.start() for e in self.endpoints.values()))
                break
            except OSError:
                await self.stop_endpoints()
                if attempt == PORT_ATTEMPTS - 1:
                    raise
        write_inventory(self.layout, self.config, port, host_keys, mode, lane_images)
        await self.reconcile()

    async def reconcile(self) -> None:
        """Bring endpoints in line with control.json and report it in status.json."""
        stopped = self.layout.stopped_nodes()
        try:
            generation = json.loads(self.layout.control.read_text()).get("generation", 0)
        except (FileNotFoundError, json.JSONDecodeError):
            generation = 0
        for name, endpoint in self.endpoints.items():
            if name in stopped and endpoint.running:
                await endpoint.stop()
            elif name not in stopped and not endpoint.running:
                await endpoint.start()
        self.generation = generation
        write_json_atomic(
            self.layout.root / "status.json",
            {
                "pid": os.getpid(),
                "ready": True,
                "generation": generation,
                "stopped": sorted(n for n, e in self.endpoints.items() if not e.running),
            },
        )

    async def stop_endpoints(self) -> None:
        await asyncio.gather(*(e.stop() for e in self.endpoints.values()), return_exceptions=True)

    def refresh_meminfo(self) -> None:
        """Every node's /proc/meminfo and /proc/stat, from its engine's load now."""
        now = time.time()
        for name in self.names:
            node_dir = self.layout.node_dir(name)
            refresh_meminfo(node_dir, now)
            cpu = self.cpu.setdefault(name, CpuCounters())
            refresh_stat(node_dir, cpu, now, self.boot_time)

    async def keep_nodes(self) -> None:
        """Every node's /proc/meminfo and /proc/stat follow its engine (`cockpit_sim.fleet.meminfo`,
        `procstat`); a node whose namespace holder died gets a new one."""
        while True:
            await asyncio.sleep(MEMINFO_EVERY_S)
            self.refresh_meminfo()
            self.namespaces.keep()

    async def watch_owner(self, done: asyncio.Event) -> None:
        """Stop the fleet when its owner process is gone, however it died (a closed terminal
        under `cockpit demo`, a killed test run): a fleet must not outlive what it serves."""
        owner = self.config.owner_pid
        if owner is None:
            return
        while pid_exists(owner):
            await asyncio.sleep(1.0)
        done.set()

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        done = asyncio.Event()
        wake = asyncio.Event()
        loop.add_signal_handler(signal.SIGTERM, done.set)
        loop.add_signal_handler(signal.SIGINT, done.set)
        loop.add_signal_handler(signal.SIGHUP, wake.set)
        watcher = asyncio.create_task(self.watch_owner(done))
        meminfo: asyncio.Task[None] | None = None
        tools: asyncio.Task[None] | None = None
        try:
            await self.start()
            meminfo = asyncio.create_task(self.keep_nodes())
            if self.tools is not None:
                tools = asyncio.create_task(self.tools.keep())
            while not done.is_set():
                waiter = asyncio.ensure_future(wake.wait())
                stopper = asyncio.ensure_future(done.wait())
                await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
                stopper.cancel()
                if wake.is_set():
                    wake.clear()
                    await self.reconcile()
        finally:
            watcher.cancel()
            for task in (meminfo, tools):
                if task is not None:
                    task.cancel()
            await self.stop_endpoints()
            if self.tools is not None:
                await self.tools.stop()
            if self.docker is not None:
                await asyncio.to_thread(self.docker.stop)
            self.namespaces.stop()
            kill_fleet_processes(self.layout.root)
            (self.layout.root / "status.json").unlink(missing_ok=True)


def raise_fd_limit() -> None:
    """Up to the hard limit: at 256 nodes a status round alone holds ~1,000 descriptors here
    (a listener, a connection and a session's three pipes per node)."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def main() -> None:
    root = Path(sys.argv[1]).resolve()
    raise_fd_limit()
    layout = FleetLayout(root)
    layout.pid_file.write_text(str(os.getpid()))
    try:
        asyncio.run(FleetDaemon(root).serve())
    finally:
        layout.pid_file.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
