"""`nvidia-container-runtime-hook` of a real-Docker node: the simulated GPU's driver stack.

Docker 20.10 registers its `nvidia` device driver when an executable of this name is on the
daemon's PATH, and adds it as an OCI prestart hook to every `--gpus` container. runc runs it with
the daemon's environment and the container's state (pid, bundle) on stdin, after the container's
own mounts and before its pivot_root, so the host's paths are still visible in the container's
mount namespace. NVIDIA's real hook bind-mounts the driver (libcuda, nvidia-smi) there; this one
mounts the simulated GPU's "driver": the interpreter, packages and sources of the simulated engine
read-only (`COCKPIT_SIM_GPU_PARTS`, paths kept as they are on the host), the node's state folder
read-write (the engine publishes its GPU load there for the node's nvidia-smi), and writes the
node's identity to `/run/cockpit-sim/node.env`, which the image's launcher sources.

Why a hook: images must be byte-identical on every node (sync verifies image ids), so nothing of
a node can be baked into them, and the recipe's `docker run` must stay the recipe's: `docker
inspect` shows only its own mounts, as on a real node, and a container run without `--gpus all`
finds no GPU. A wrapper around `docker` adding `-v` mounts would show in `inspect`; copying the
interpreter into every image would cost hundreds of MB per node.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

IDENTITY = "/run/cockpit-sim/node.env"
IDENTITY_KEYS = (
    "COCKPIT_SIM_NODE",
    "COCKPIT_SIM_NODE_DIR",
    "COCKPIT_SIM_NODE_ADDR",
    "COCKPIT_SIM_FLEET_DIR",
    "COCKPIT_SIM_SPEED",
    "COCKPIT_SIM_BOOT_SPEED",
    "COCKPIT_SIM_PYTHON",
    "PYTHONPATH",
)
"""What the engine learns of its node; the sessions' own keys (PATH, HOME, meminfo) stay out."""


def rootfs_of(state: dict[str, object], config: dict[str, object]) -> str:
    """The container's root file system on the host (the bundle's `root.path`, maybe relative)."""
    bundle = str(state["bundle"])
    root = str(config["root"]["path"])  # type: ignore[index]
    return root if os.path.isabs(root) else os.path.join(bundle, root)


def mounts(env: dict[str, str]) -> list[tuple[str, bool]]:
    """(host path, read-only) to mount at the same path in the container."""
    parts = [(p, True) for p in env.get("COCKPIT_SIM_GPU_PARTS", "").split(os.pathsep) if p]
    node_dir = env.get("COCKPIT_SIM_NODE_DIR")
    return [*parts, *([(node_dir, False)] if node_dir else [])]


def identity(env: dict[str, str], host_pid: int) -> str:
    """The node.env the launcher sources: KEY='value' lines, shell-quoted."""
    values = {k: env[k] for k in IDENTITY_KEYS if env.get(k)}
    values["COCKPIT_SIM_HOST_PID"] = str(host_pid)  # what nvidia-smi lists: the host's pid
    return "".join(f"{k}={shlex.quote(v)}\n" for k, v in values.items())


def mount_script(rootfs: str, wanted: list[tuple[str, bool]]) -> str:
    """The shell lines that bind-mount `wanted` under `rootfs` (run in the container's mount
    namespace: propagation from the host stopped when it was created)."""
    lines = []
    for source, read_only in wanted:
        target = rootfs + source
        options = "-o ro " if read_only else ""
        lines.append(f"mount --bind {options}{shlex.quote(source)} {shlex.quote(target)}")
    return " && ".join(lines) or "true"


def _make_target(rootfs: str, source: str) -> None:
    target = rootfs + source
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "a"):
            pass


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] != ["prestart"]:
        return 0  # NVIDIA's hook also ignores the other stages
    state = json.load(sys.stdin)
    with open(os.path.join(str(state["bundle"]), "config.json")) as handle:
        config = json.load(handle)
    rootfs = rootfs_of(state, config)
    env = dict(os.environ)
    wanted = [(path, ro) for path, ro in mounts(env) if os.path.exists(path)]
    for source, _ in wanted:
        _make_target(rootfs, source)
    pid = int(state["pid"])  # type: ignore[call-overload]
    script = mount_script(rootfs, wanted)
    done = subprocess.run(
        ["nsenter", "--target", str(pid), "--mount", "--", "sh", "-c", script],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.stderr.write(f"nvidia-container-runtime-hook: {done.stderr.strip()}\n")
        return 1
    os.makedirs(rootfs + os.path.dirname(IDENTITY), exist_ok=True)
    with open(rootfs + IDENTITY, "w") as handle:
        handle.write(identity(env, pid))
    return 0
