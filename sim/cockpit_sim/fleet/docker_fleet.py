"""The real Docker of a fleet started with `--docker real`: a daemon per node, one registry.

Each node's daemon keeps its data in `nodes/dgxK/docker` and its sockets in a short temp folder
(`realdocker.Dockerd`); its environment carries the node's identity, which the simulated GPU's
hook (on the daemon's PATH, `cockpit_sim.tools.gpu_hook`) hands to `--gpus` containers, and the
fleet's marker `COCKPIT_SIM_FLEET_DIR`, so the fleet's process sweep finds dockerd, containerd and
the shims. On a host that cannot raise resource limits the daemons run runc through
`cockpit-runc` (`cockpit_sim.tools.runc_clamp`). The registry serves on a free 127.0.0.1 port.
`stop` is idempotent and also cleans up after daemons whose fleet was killed outright (pid files,
cgroup parents, mounts).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from cockpit_sim.fleet.lane_images import ImageSpec, LaneImage, build
from cockpit_sim.fleet.layout import FleetLayout
from cockpit_sim.fleet.realdocker import Dockerd, RealDockerError, Registry, missing_parts
from cockpit_sim.tools.launchers import IMPORT_ROOTS, pythonpath, write_gpu_hook, write_runtime
from cockpit_sim.tools.runc_clamp import needs_clamp

T = TypeVar("T")
HOOK_DIR = "gpu-hook"  # the GPU hook and, where needed, the clamping runtime
REGISTRY_DIR = "registry"
PULL_TIMEOUT_S = 120.0


def gpu_parts() -> list[str]:
    """What the GPU hook mounts read-only into `--gpus` containers: the host's libraries, the
    simulator's interpreter, its packages and the cockpit sources (nested paths dropped)."""
    interpreter = os.path.realpath(sys.executable)
    candidates = ["/usr/lib", "/usr/lib64", sys.base_prefix, interpreter, sys.prefix]
    candidates.extend(IMPORT_ROOTS)
    kept: list[str] = []
    for path in sorted({os.path.realpath(c) for c in candidates if os.path.exists(c)}, key=len):
        if path != "/" and not any(path == k or path.startswith(k + "/") for k in kept):
            kept.append(path)
    # /usr itself would hide the image's own /usr/bin (its launchers): mount the interpreter
    if "/usr" in kept:
        kept.remove("/usr")
        kept += [p for p in ("/usr/lib", "/usr/lib64", interpreter) if os.path.exists(p)]
    return kept


def _parallel(func: Callable[[T], object], items: Iterable[T]) -> None:
    """Run `func` on every item in threads; the first error is raised after all finished."""
    items = list(items)
    with ThreadPoolExecutor(max_workers=max(1, len(items))) as pool:
        futures = [pool.submit(func, item) for item in items]
    for future in futures:
        future.result()


class DockerFleet:
    """The daemons (one per node) and the registry of a real-Docker fleet in `layout`."""

    def __init__(self, layout: FleetLayout, names: list[str]) -> None:
        self.layout = layout
        self.names = list(names)
        self.hook_dir = layout.root / HOOK_DIR
        self.registry = Registry(layout.root / REGISTRY_DIR)
        self.daemons = {
            name: Dockerd(layout.node_dir(name) / "docker", extra_path=(self.hook_dir,))
            for name in self.names
        }

    def prepare(self) -> dict[str, str]:
        """Socket folders chosen and the GPU hook written; node → DOCKER_HOST."""
        missing = missing_parts()
        if missing:
            raise RealDockerError(
                f"a real-Docker fleet needs {', '.join(missing)} (Debian: apt-get install "
                "docker.io docker-registry busybox-static)"
            )
        write_gpu_hook(self.hook_dir)
        if needs_clamp():  # this host cannot grant `--ulimit memlock=-1` (see runc_clamp)
            runtime = write_runtime(self.hook_dir)
            for daemon in self.daemons.values():
                daemon.runtime = runtime
        return {name: daemon.prepare() for name, daemon in self.daemons.items()}

    def start(self, node_envs: Mapping[str, Mapping[str, str]]) -> None:
        """Start the registry and every node's daemon (concurrently), each daemon with the
        node's identity (`COCKPIT_SIM_*` of its session environment) for the GPU hook."""
        marker = {"COCKPIT_SIM_FLEET_DIR": str(self.layout.root)}
        self.registry = Registry(self.registry.data_dir, env=marker)  # a port free now
        parts = os.pathsep.join(gpu_parts())
        for name, daemon in self.daemons.items():
            identity = {
                k: v
                for k, v in node_envs[name].items()
                if k.startswith("COCKPIT_SIM_") and k != "COCKPIT_SIM_BIN"
            }
            daemon.daemon_env = {
                **identity,
                **marker,
                "COCKPIT_SIM_GPU_PARTS": parts,
                "COCKPIT_SIM_PYTHON": sys.executable,
                "PYTHONPATH": pythonpath(),
            }
        starts = [self.registry.start, *(d.start for d in self.daemons.values())]
        _parallel(lambda start: start(), starts)

    def seed(self, wanted: Iterable[tuple[ImageSpec, list[str]]]) -> list[LaneImage]:
        """Build each image once (on the first node), push it, then pull it by digest onto the
        nodes listed with it: every node's copy comes from the registry, same id everywhere."""
        builder = self.daemons[self.names[0]]
        built = [(build(builder, self.registry, spec, self.layout.root), n) for spec, n in wanted]
        if built:
            builder.docker("rmi", "-f", *sorted({image.image_id for image, _ in built}))
        pulls = [(node, image.ref) for image, nodes in built for node in nodes]
        _parallel(lambda p: self.docker(p[0], "pull", p[1], timeout=PULL_TIMEOUT_S), pulls)
        return [image for image, _ in built]

    def stop(self) -> None:
        """Remove every container, stop every daemon and the registry, remove their files."""

        def one(daemon: Dockerd) -> None:
            daemon.remove_containers()
            daemon.stop()

        _parallel(one, self.daemons.values())
        self.registry.stop()

    def docker(self, node: str, *args: str, timeout: float = 60.0) -> str:
        """Debian's client against the node's daemon (what a node session's `docker` runs)."""
        return self.daemons[node].docker(*args, timeout=timeout)
