"""`docker info` and `docker version`: the node's daemon as a DGX Spark's (GB10, arm64)."""

from __future__ import annotations

import contextlib
import os
from datetime import UTC, datetime
from pathlib import Path

from cockpit_sim.tools import dockerfmt, dockerinfo
from cockpit_sim.tools.docker.containers import container_state, docker_root, has_container_toolkit
from cockpit_sim.tools.docker.options import opt, split_options
from cockpit_sim.tools.docker.output import out
from cockpit_sim.tools.nodestate import NodeState

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
