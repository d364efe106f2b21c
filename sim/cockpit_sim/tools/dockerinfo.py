"""`docker info` and `docker version` of a simulated node: Docker 20.10's objects and text layout.

The simulator imitates Debian's docker.io 20.10.24 (the daemon `tests/sim_fleet/
test_docker_contract.py` holds it to), so it reports that build's versions. A simulated node is a
DGX Spark with NVIDIA's container toolkit installed: its runtimes include `nvidia` and `--gpus`
works, unless the node's `no-container-toolkit` fault is set (`cockpit sim fault NODE
no-container-toolkit`), where both are gone as on a node without the toolkit.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from typing import Any

Record = dict[str, Any]

SERVER_VERSION = "20.10.24+dfsg1"
API_VERSION = "1.41"
MIN_API_VERSION = "1.12"
GO_VERSION = "go1.19.8"
CLIENT_COMMIT = "297e128"
SERVER_COMMIT = "5d6db84"
BUILD_TIME = "Thu May  7 21:09:36 2026"
BUILD_TIME_RFC3339 = "2026-05-07T21:09:36.000000000+00:00"
CONTAINERD = ("1.6.20~ds1", "1.6.20~ds1-1+deb12u3")
RUNC = ("1.1.5+ds1", "1.1.5+ds1-1+deb12u1")
INIT = ("0.19.0", "")
NVIDIA_RUNTIME = "nvidia-container-runtime"
NO_TOOLKIT_FAULT = "no-container-toolkit"
LOG_DRIVERS = [
    "awslogs",
    "fluentd",
    "gcplogs",
    "gelf",
    "journald",
    "json-file",
    "local",
    "logentries",
    "splunk",
    "syslog",
]
NETWORK_DRIVERS = ["bridge", "host", "ipvlan", "macvlan", "null", "overlay"]


@dataclass(frozen=True)
class Daemon:
    """What `docker info` reports about one node's daemon."""

    name: str
    cpus: int
    mem_total: int
    root_dir: str
    kernel: str
    operating_system: str
    os_version: str
    architecture: str
    running: int
    paused: int
    stopped: int
    images: int
    nvidia: bool
    system_time: str


def daemon_id(name: str) -> str:
    """The daemon's ID: 12 groups of 4 base32 characters, stable per node."""
    raw = base64.b32encode(hashlib.sha256(f"daemon:{name}".encode()).digest()).decode()
    return ":".join(raw[i : i + 4] for i in range(0, 48, 4))


def runtimes(nvidia: bool) -> Record:
    found = {
        "io.containerd.runc.v2": {"path": "runc"},
        "io.containerd.runtime.v1.linux": {"path": "runc"},
        "runc": {"path": "runc"},
    }
    if nvidia:
        found["nvidia"] = {"path": NVIDIA_RUNTIME}
    return found


def info_object(daemon: Daemon) -> Record:
    """`docker info --format '{{json .}}'` (Docker 20.10, cgroup v1, overlay2)."""
    return {
        "ID": daemon_id(daemon.name),
        "Containers": daemon.running + daemon.paused + daemon.stopped,
        "ContainersRunning": daemon.running,
        "ContainersPaused": daemon.paused,
        "ContainersStopped": daemon.stopped,
        "Images": daemon.images,
        "Driver": "overlay2",
        "DriverStatus": [
            ["Backing Filesystem", "extfs"],
            ["Supports d_type", "true"],
            ["Native Overlay Diff", "true"],
            ["userxattr", "false"],
        ],
        "Plugins": {
            "Volume": ["local"],
            "Network": list(NETWORK_DRIVERS),
            "Authorization": None,
            "Log": list(LOG_DRIVERS),
        },
        "MemoryLimit": True,
        "SwapLimit": True,
        "KernelMemory": True,
        "KernelMemoryTCP": True,
        "CpuCfsPeriod": True,
        "CpuCfsQuota": True,
        "CPUShares": True,
        "CPUSet": True,
        "PidsLimit": True,
        "IPv4Forwarding": True,
        "BridgeNfIptables": True,
        "BridgeNfIp6tables": True,
        "Debug": False,
        "NFd": 32,
        "OomKillDisable": True,
        "NGoroutines": 45,
        "SystemTime": daemon.system_time,
        "LoggingDriver": "json-file",
        "CgroupDriver": "cgroupfs",
        "CgroupVersion": "1",
        "NEventsListener": 0,
        "KernelVersion": daemon.kernel,
        "OperatingSystem": daemon.operating_system,
        "OSVersion": daemon.os_version,
        "OSType": "linux",
        "Architecture": daemon.architecture,
        "IndexServerAddress": "https://index.docker.io/v1/",
        "RegistryConfig": {
            "AllowNondistributableArtifactsCIDRs": [],
            "AllowNondistributableArtifactsHostnames": [],
            "InsecureRegistryCIDRs": ["127.0.0.0/8"],
            "IndexConfigs": {
                "docker.io": {"Name": "docker.io", "Mirrors": [], "Secure": True, "Official": True}
            },
            "Mirrors": [],
        },
        "NCPU": daemon.cpus,
        "MemTotal": daemon.mem_total,
        "GenericResources": None,
        "DockerRootDir": daemon.root_dir,
        "HttpProxy": "",
        "HttpsProxy": "",
        "NoProxy": "",
        "Name": daemon.name,
        "Labels": [],
        "ExperimentalBuild": False,
        "ServerVersion": SERVER_VERSION,
        "Runtimes": runtimes(daemon.nvidia),
        "DefaultRuntime": "runc",
        "Swarm": {
            "NodeID": "",
            "NodeAddr": "",
            "LocalNodeState": "inactive",
            "ControlAvailable": False,
            "Error": "",
            "RemoteManagers": None,
        },
        "LiveRestoreEnabled": False,
        "Isolation": "",
        "InitBinary": "docker-init",
        "ContainerdCommit": {"ID": CONTAINERD[1], "Expected": CONTAINERD[1]},
        "RuncCommit": {"ID": RUNC[1], "Expected": RUNC[1]},
        "InitCommit": {"ID": INIT[1], "Expected": INIT[1]},
        "SecurityOptions": ["name=seccomp,profile=default"],
        "Warnings": None,
        "ClientInfo": {"Debug": False, "Context": "default", "Plugins": [], "Warnings": None},
    }


def bytes_size(size: float) -> str:
    """go-units BytesSize: binary units, 4 significant digits (`23.54GiB`, `644KiB`)."""
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
    i = 0
    while size >= 1024 and i < len(units) - 1:
        size /= 1024
        i += 1
    return f"{size:.4g}{units[i]}"


def info_text(info: Record) -> str:
    """`docker info` as Docker 20.10's CLI prints it."""
    driver = "".join(f"  {key}: {value}\n" for key, value in info["DriverStatus"])
    plugins = info["Plugins"]
    return (
        "Client:\n Context:    default\n Debug Mode: false\n\n"
        "Server:\n"
        f" Containers: {info['Containers']}\n"
        f"  Running: {info['ContainersRunning']}\n"
        f"  Paused: {info['ContainersPaused']}\n"
        f"  Stopped: {info['ContainersStopped']}\n"
        f" Images: {info['Images']}\n"
        f" Server Version: {info['ServerVersion']}\n"
        f" Storage Driver: {info['Driver']}\n{driver}"
        f" Logging Driver: {info['LoggingDriver']}\n"
        f" Cgroup Driver: {info['CgroupDriver']}\n"
        f" Cgroup Version: {info['CgroupVersion']}\n"
        " Plugins:\n"
        f"  Volume: {' '.join(plugins['Volume'])}\n"
        f"  Network: {' '.join(plugins['Network'])}\n"
        f"  Log: {' '.join(plugins['Log'])}\n"
        " Swarm: inactive\n"
        f" Runtimes: {' '.join(info['Runtimes'])}\n"
        f" Default Runtime: {info['DefaultRuntime']}\n"
        f" Init Binary: {info['InitBinary']}\n"
        f" containerd version: {info['ContainerdCommit']['ID']}\n"
        f" runc version: {info['RuncCommit']['ID']}\n"
        f" init version: {info['InitCommit']['ID']}\n"
        " Security Options:\n  seccomp\n   Profile: default\n"
        f" Kernel Version: {info['KernelVersion']}\n"
        f" Operating System: {info['OperatingSystem']}\n"
        f" OSType: {info['OSType']}\n"
        f" Architecture: {info['Architecture']}\n"
        f" CPUs: {info['NCPU']}\n"
        f" Total Memory: {bytes_size(info['MemTotal'])}\n"
        f" Name: {info['Name']}\n"
        f" ID: {info['ID']}\n"
        f" Docker Root Dir: {info['DockerRootDir']}\n"
        " Debug Mode: false\n"
        " Registry: https://index.docker.io/v1/\n"
        " Labels:\n"
        " Experimental: false\n"
        " Insecure Registries:\n  127.0.0.0/8\n"
        " Live Restore Enabled: false\n\n"
    )


def version_object(kernel: str, arch: str) -> Record:
    """`docker version --format '{{json .}}'`; `arch` in Go's spelling (arm64, amd64)."""
    return {
        "Client": {
            "Platform": {"Name": ""},
            "Version": SERVER_VERSION,
            "ApiVersion": API_VERSION,
            "DefaultAPIVersion": API_VERSION,
            "GitCommit": CLIENT_COMMIT,
            "GoVersion": GO_VERSION,
            "Os": "linux",
            "Arch": arch,
            "BuildTime": BUILD_TIME,
            "Context": "default",
            "Experimental": True,
        },
        "Server": {
            "Platform": {"Name": ""},
            "Components": [
                {
                    "Name": "Engine",
                    "Version": SERVER_VERSION,
                    "Details": {
                        "ApiVersion": API_VERSION,
                        "Arch": arch,
                        "BuildTime": BUILD_TIME,
                        "Experimental": "false",
                        "GitCommit": SERVER_COMMIT,
                        "GoVersion": GO_VERSION,
                        "KernelVersion": kernel,
                        "MinAPIVersion": MIN_API_VERSION,
                        "Os": "linux",
                    },
                },
                {
                    "Name": "containerd",
                    "Version": CONTAINERD[0],
                    "Details": {"GitCommit": CONTAINERD[1]},
                },
                {"Name": "runc", "Version": RUNC[0], "Details": {"GitCommit": RUNC[1]}},
                {"Name": "docker-init", "Version": INIT[0], "Details": {"GitCommit": INIT[1]}},
            ],
            "Version": SERVER_VERSION,
            "ApiVersion": API_VERSION,
            "MinAPIVersion": MIN_API_VERSION,
            "GitCommit": SERVER_COMMIT,
            "GoVersion": GO_VERSION,
            "Os": "linux",
            "Arch": arch,
            "KernelVersion": kernel,
            "BuildTime": BUILD_TIME_RFC3339,
        },
    }


def version_text(version: Record) -> str:
    """`docker version` as Docker 20.10's CLI prints it."""
    client, server = version["Client"], version["Server"]
    engine = server["Components"][0]["Details"]
    lines = [
        "Client:",
        f" Version:           {client['Version']}",
        f" API version:       {client['ApiVersion']}",
        f" Go version:        {client['GoVersion']}",
        f" Git commit:        {client['GitCommit']}",
        f" Built:             {client['BuildTime']}",
        f" OS/Arch:           {client['Os']}/{client['Arch']}",
        f" Context:           {client['Context']}",
        f" Experimental:      {str(client['Experimental']).lower()}",
        "",
        "Server:",
        " Engine:",
        f"  Version:          {server['Version']}",
        f"  API version:      {engine['ApiVersion']} (minimum version {engine['MinAPIVersion']})",
        f"  Go version:       {engine['GoVersion']}",
        f"  Git commit:       {engine['GitCommit']}",
        f"  Built:            {engine['BuildTime']}",
        f"  OS/Arch:          {engine['Os']}/{engine['Arch']}",
        f"  Experimental:     {engine['Experimental']}",
    ]
    for component in server["Components"][1:]:
        lines += [
            f" {component['Name']}:",
            f"  Version:          {component['Version']}",
            f"  GitCommit:        {component['Details']['GitCommit']}",
        ]
    return "\n".join(lines) + "\n"
