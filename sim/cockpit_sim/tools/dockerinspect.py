"""What `docker inspect` prints for the simulator's records, in Docker 20.10's exact shape.

Keys, nesting and value types follow the daemon's JSON (`tests/sim_fleet/test_docker_contract.py`
holds them to a real daemon): sizes are integers, `--ulimit` and `--gpus` become objects
(`Ulimits`, `DeviceRequests`), and every key Docker always prints is there, with Docker's own
defaults, so a parser written against a real node reads a simulated one unchanged. The `run`
options are turned into those shapes here too (pure functions, no I/O).
"""

from __future__ import annotations

import copy
import hashlib
import re
from typing import Any

Record = dict[str, Any]
ZERO_TIME = "0001-01-01T00:00:00Z"
DEFAULT_SHM = 64 << 20
VOLUME_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_.-]+$")
ULIMIT_NAMES = frozenset(
    [
        "core",
        "cpu",
        "data",
        "fsize",
        "locks",
        "memlock",
        "msgqueue",
        "nice",
        "nofile",
        "nproc",
        "rss",
        "rtprio",
        "rttime",
        "sigpending",
        "stack",
    ]
)


class OptionError(ValueError):
    """A `run` option Docker refuses, with its message: the CLI's for a malformed flag value
    (`daemon` False), the daemon's for a spec it cannot create."""

    def __init__(self, message: str, daemon: bool = False) -> None:
        super().__init__(message)
        self.daemon = daemon


def derived_hex(*parts: str) -> str:
    """64 hex digits that always come out the same for the same parts (ids Docker makes up)."""
    return hashlib.sha256(":".join(parts).encode()).hexdigest()


# ----------------------------------------------------------------------------- run options


def ram_in_bytes(text: str) -> int:
    """go-units RAMInBytes: `32g`, `64m`, `1024` (binary units, an optional `b`)."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmgtp]?)b?", text.strip().lower())
    if not match:
        raise OptionError(
            f'invalid argument "{text}" for "--shm-size" flag: invalid size: \'{text}\''
        )
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
    return int(float(match.group(1)) * scale[match.group(2)])


def ulimit(spec: str) -> Record:
    """`memlock=-1` / `nofile=1024:2048` → `{"Name", "Hard", "Soft"}` as the daemon stores it."""
    name, eq, values = spec.partition("=")
    flag = f'invalid argument "{spec}" for "--ulimit" flag: '
    if not eq:
        raise OptionError(flag + f"invalid ulimit argument: {spec}")
    if name not in ULIMIT_NAMES:
        raise OptionError(flag + f"invalid ulimit type: {name}")
    soft, _, hard = values.partition(":")
    try:
        low = int(soft)
        high = int(hard) if hard else low
    except ValueError:
        raise OptionError(flag + f"invalid ulimit argument: {spec}") from None
    return {"Name": name, "Hard": high, "Soft": low}


def device_requests(gpus: str) -> list[Record]:
    """`--gpus all` / `--gpus 2` / `--gpus device=0,1` → HostConfig.DeviceRequests."""
    request: Record = {
        "Driver": "",
        "Count": 0,
        "DeviceIDs": None,
        "Capabilities": [["gpu"]],
        "Options": {},
    }
    value = gpus.strip().strip('"')
    if value == "all":
        request["Count"] = -1
    elif value.isdigit():
        request["Count"] = int(value)
    elif value.startswith("device="):
        request["DeviceIDs"] = value.removeprefix("device=").split(",")
    else:
        raise OptionError(
            f'invalid argument "{gpus}" for "--gpus" flag: count must be an integer: '
            f'strconv.Atoi: parsing "{value}": invalid syntax'
        )
    return [request]


def mount(spec: str, volumes_dir: str, anonymous_name: str) -> Record:
    """One `-v` as the daemon records it.

    An absolute source is a bind mount; anything else names a local VOLUME (so a relative
    `hf-cache:/x` is an empty volume, not `$PWD/hf-cache`), and a name with characters a local
    volume may not have (`vllm-cache/x`, `./x`) is refused as the daemon refuses it. A lone
    container path is an anonymous volume."""
    parts = spec.split(":")
    if len(parts) == 1:
        source, destination, mode = "", parts[0], ""
    else:
        source, destination, mode = parts[0], parts[1], ":".join(parts[2:])
        if not destination.startswith("/"):
            kind = "bind" if source.startswith("/") else "volume"
            raise OptionError(
                f"invalid volume specification: '{spec}': invalid mount config for type "
                f"\"{kind}\": invalid mount path: '{destination}' mount path must be absolute",
                daemon=True,
            )
    read_write = "ro" not in (mode.split(",") if mode else [])
    if source.startswith("/"):
        return {
            "Type": "bind",
            "Source": source,
            "Destination": destination,
            "Mode": mode,
            "RW": read_write,
            "Propagation": "rprivate",
        }
    name = source or anonymous_name
    if not VOLUME_NAME.match(name):
        raise OptionError(
            f'create {name}: "{name}" includes invalid characters for a local volume name, '
            'only "[a-zA-Z0-9][a-zA-Z0-9_.-]" are allowed. If you intended to pass a host '
            "directory, use absolute path",
            daemon=True,
        )
    return {
        "Type": "volume",
        "Name": name,
        "Source": f"{volumes_dir}/{name}/_data",
        "Destination": destination,
        "Driver": "local",
        "Mode": mode or ("z" if source else ""),
        "RW": read_write,
        "Propagation": "",
    }


def merged_env(image_env: list[str] | None, given: list[str]) -> list[str] | None:
    """The container's Env as the daemon merges it: the `-e` values, then each image entry whose
    name they do not set."""
    keys = {item.partition("=")[0] for item in given}
    env = [*given, *(e for e in image_env or [] if e.partition("=")[0] not in keys)]
    return env or None


# --------------------------------------------------------------------------- inspect shapes


def config_shape(config: Record, **overrides: Any) -> Record:
    """A container config (the `Config` of an image or a container) with every key Docker
    prints, in its order."""
    shape = {
        "Hostname": "",
        "Domainname": "",
        "User": "",
        "AttachStdin": False,
        "AttachStdout": False,
        "AttachStderr": False,
        "Tty": False,
        "OpenStdin": False,
        "StdinOnce": False,
        "Env": config.get("Env") or None,
        "Cmd": config.get("Cmd") or None,
        "Image": config.get("Image", ""),
        "Volumes": config.get("Volumes") or None,
        "WorkingDir": config.get("WorkingDir", ""),
        "Entrypoint": config.get("Entrypoint") or None,
        "OnBuild": None,
        "Labels": config.get("Labels") or None,
    }
    shape.update(overrides)
    return shape


def graph_driver(root: str, layer: str, container: bool) -> Record:
    base = f"{root}/overlay2/{layer}"
    data = {"MergedDir": f"{base}/merged", "UpperDir": f"{base}/diff", "WorkDir": f"{base}/work"}
    if container:
        data = {"LowerDir": f"{base}-init/diff", **data}
    return {"Data": data, "Name": "overlay2"}


def layer_ids(image: Record) -> list[str]:
    """The image's layers (RootFS): one, derived from its id (the simulator moves no layers)."""
    return ["sha256:" + derived_hex("layer", image["Id"].removeprefix("sha256:"))]


def image_shape(image: Record, root: str, docker_version: str) -> Record:
    """`docker image inspect` of one image record."""
    image_hex = image["Id"].removeprefix("sha256:")
    return {
        "Id": image["Id"],
        "RepoTags": list(image["RepoTags"]),
        "RepoDigests": list(image["RepoDigests"]),
        "Parent": "",
        "Comment": image.get("Comment", ""),
        "Created": image["Created"],
        "Container": "",
        "ContainerConfig": config_shape({}),
        "DockerVersion": docker_version,
        "Author": "",
        "Config": config_shape(image["Config"]),
        "Architecture": image.get("Architecture", "arm64"),
        "Os": image.get("Os", "linux"),
        "Size": image["Size"],
        "VirtualSize": image["Size"],
        "GraphDriver": graph_driver(root, derived_hex("cache", image_hex), container=False),
        "RootFS": {"Type": "layers", "Layers": layer_ids(image)},
        "Metadata": {"LastTagTime": image.get("LastTagTime") or ZERO_TIME},
    }


HOST_CONFIG: Record = {
    "Binds": None,
    "ContainerIDFile": "",
    "LogConfig": {"Type": "json-file", "Config": {}},
    "NetworkMode": "default",
    "PortBindings": {},
    "RestartPolicy": {"Name": "no", "MaximumRetryCount": 0},
    "AutoRemove": False,
    "VolumeDriver": "",
    "VolumesFrom": None,
    "CapAdd": None,
    "CapDrop": None,
    "CgroupnsMode": "host",
    "Dns": [],
    "DnsOptions": [],
    "DnsSearch": [],
    "ExtraHosts": None,
    "GroupAdd": None,
    "IpcMode": "private",
    "Cgroup": "",
    "Links": None,
    "OomScoreAdj": 0,
    "PidMode": "",
    "Privileged": False,
    "PublishAllPorts": False,
    "ReadonlyRootfs": False,
    "SecurityOpt": None,
    "UTSMode": "",
    "UsernsMode": "",
    "ShmSize": DEFAULT_SHM,
    "Runtime": "runc",
    "ConsoleSize": [0, 0],
    "Isolation": "",
    "CpuShares": 0,
    "Memory": 0,
    "NanoCpus": 0,
    "CgroupParent": "",
    "BlkioWeight": 0,
    "BlkioWeightDevice": [],
    "BlkioDeviceReadBps": None,
    "BlkioDeviceWriteBps": None,
    "BlkioDeviceReadIOps": None,
    "BlkioDeviceWriteIOps": None,
    "CpuPeriod": 0,
    "CpuQuota": 0,
    "CpuRealtimePeriod": 0,
    "CpuRealtimeRuntime": 0,
    "CpusetCpus": "",
    "CpusetMems": "",
    "Devices": [],
    "DeviceCgroupRules": None,
    "DeviceRequests": None,
    "KernelMemory": 0,
    "KernelMemoryTCP": 0,
    "MemoryReservation": 0,
    "MemorySwap": 0,
    "MemorySwappiness": None,
    "OomKillDisable": False,
    "PidsLimit": None,
    "Ulimits": None,
    "CpuCount": 0,
    "CpuPercent": 0,
    "IOMaximumIOps": 0,
    "IOMaximumBandwidth": 0,
    "MaskedPaths": [
        "/proc/asound",
        "/proc/acpi",
        "/proc/kcore",
        "/proc/keys",
        "/proc/latency_stats",
        "/proc/timer_list",
        "/proc/timer_stats",
        "/proc/sched_debug",
        "/proc/scsi",
        "/sys/firmware",
    ],
    "ReadonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"],
}
"""HostConfig of `docker run IMAGE` on Docker 20.10 (cgroup v1, no options): what every
container shows for the options it was not given."""


def host_config(**given: Any) -> Record:
    """HostConfig with the given keys (`NetworkMode="host"`, `ShmSize=…`) over the defaults;
    `--ipc host` disables SELinux labels, as the daemon records it."""
    shape = copy.deepcopy(HOST_CONFIG)
    shape.update(given)
    if shape["IpcMode"] == "host" and shape["SecurityOpt"] is None:
        shape["SecurityOpt"] = ["label=disable"]
    return shape


def state_shape(state: Record) -> Record:
    return {
        "Status": state.get("Status", "created"),
        "Running": bool(state.get("Running")),
        "Paused": False,
        "Restarting": False,
        "OOMKilled": bool(state.get("OOMKilled")),
        "Dead": False,
        "Pid": int(state.get("Pid") or 0),
        "ExitCode": int(state.get("ExitCode") or 0),
        "Error": state.get("Error", ""),
        "StartedAt": state.get("StartedAt") or ZERO_TIME,
        "FinishedAt": state.get("FinishedAt") or ZERO_TIME,
    }


def network_settings(cid: str, network: str, exec_root: str) -> Record:
    """NetworkSettings of a container on `network` (host networking: no addresses of its own)."""
    endpoint = {
        "IPAMConfig": None,
        "Links": None,
        "Aliases": None,
        "NetworkID": derived_hex("network", network),
        "EndpointID": derived_hex("endpoint", cid),
        "Gateway": "",
        "IPAddress": "",
        "IPPrefixLen": 0,
        "IPv6Gateway": "",
        "GlobalIPv6Address": "",
        "GlobalIPv6PrefixLen": 0,
        "MacAddress": "",
        "DriverOpts": None,
    }
    return {
        "Bridge": "",
        "SandboxID": derived_hex("sandbox", cid),
        "HairpinMode": False,
        "LinkLocalIPv6Address": "",
        "LinkLocalIPv6PrefixLen": 0,
        "Ports": {},
        "SandboxKey": f"{exec_root}/netns/{'default' if network == 'host' else cid[:12]}",
        "SecondaryIPAddresses": None,
        "SecondaryIPv6Addresses": None,
        "EndpointID": "",
        "Gateway": "",
        "GlobalIPv6Address": "",
        "GlobalIPv6PrefixLen": 0,
        "IPAddress": "",
        "IPPrefixLen": 0,
        "IPv6Gateway": "",
        "MacAddress": "",
        "Networks": {"bridge" if network == "default" else network: endpoint},
    }


def container_shape(record: Record, state: Record, root: str, exec_root: str) -> Record:
    """`docker inspect` of one container record whose current state is `state`."""
    cid = record["Id"]
    files = f"{root}/containers/{cid}"
    host = record["HostConfig"]
    return {
        "Id": cid,
        "Created": record["Created"],
        "Path": record["Path"],
        "Args": list(record["Args"]),
        "State": state_shape(state),
        "Image": record["Image"],
        "ResolvConfPath": f"{files}/resolv.conf",
        "HostnamePath": f"{files}/hostname",
        "HostsPath": f"{files}/hosts",
        "LogPath": f"{files}/{cid}-json.log",
        "Name": "/" + record["Name"],
        "RestartCount": 0,
        "Driver": "overlay2",
        "Platform": "linux",
        "MountLabel": "",
        "ProcessLabel": "",
        "AppArmorProfile": "",
        "ExecIDs": record.get("ExecIDs") or None,
        "HostConfig": host,
        "GraphDriver": graph_driver(root, derived_hex("rw", cid), container=True),
        "Mounts": list(record["Mounts"]),
        "Config": record["Config"],
        "NetworkSettings": network_settings(cid, host["NetworkMode"], exec_root),
    }
