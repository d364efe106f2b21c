"""The lane images of a real-Docker fleet, made at fleet start without any pull from the internet.

Each distinct recipe image becomes a small image of its own: a static busybox root file system,
the launcher the recipe's ENTRYPOINT names (`vllm serve`, or SparkRing's `python3
/opt/sparkring/toolchain.py`), and the recipe's labels (publication, base). The launcher hands
over to the simulated engine that the node's GPU hook mounts (`cockpit_sim.tools.gpu_hook`):
nothing of a node is in an image, so an image is the same (id and digest) everywhere. Each is
built once, pushed to the fleet's registry, and pulled by digest onto the nodes that hold it in
the seed state; the fleet's recipes then reference `127.0.0.1:PORT/org/name@sha256:…` with the
image's true id and size. Everything else in a recipe (TP, env, NCCL block, flags) stays.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
from dataclasses import dataclass
from pathlib import Path

from cockpit_sim.fleet.realdocker import Dockerd, RealDockerError, Registry, import_busybox
from cockpit_sim.tools.nodestate import GIB

IDENTITY = "/run/cockpit-sim/node.env"  # written into each --gpus container by the GPU hook
PATH = "/usr/bin:/bin"
MANIFEST_V2 = "application/vnd.docker.distribution.manifest.v2+json"

LAUNCHER = """#!/bin/sh
# {name}: the simulated vLLM engine, from the simulated GPU's driver stack (the GPU hook mounts
# the interpreter and the engine, and writes the node's identity: cockpit_sim.tools.gpu_hook).
if [ ! -r {identity} ]; then
  echo "RuntimeError: Failed to infer device type: no GPU in this container (--gpus all?)" >&2
  exit 1
fi
set -a; . {identity}; set +a
exec "$COCKPIT_SIM_PYTHON" {args}"$@"
"""

SCRIPT = '''"""{path}, simulated: hands its arguments to the simulated vLLM engine."""
import runpy
import sys

sys.argv = ["vllm", *sys.argv[1:]]
runpy.run_module("cockpit_sim.engine", run_name="__main__", alter_sys=True)
'''

_PYTHON = re.compile(r"^python3?(\.\d+)?$")


@dataclass(frozen=True)
class ImageSpec:
    """What an image is made of: the recipes' reference it stands for, its repository, a tag,
    labels and ENTRYPOINT."""

    source_ref: str
    repository: str
    tag: str
    labels: dict[str, str]
    entrypoint: list[str]


@dataclass(frozen=True)
class LaneImage:
    """A recipe image as the fleet built it; `ref` names it by its registry digest."""

    source_ref: str  # the recipes' own reference (what they are matched on)
    ref: str
    image_id: str
    size_bytes: int
    compressed_bytes: int


def launcher_files(entrypoint: list[str]) -> dict[str, tuple[str, int]]:
    """The files that make the image's ENTRYPOINT start the simulated engine.

    `python3 SCRIPT.py`: a `python3` that runs the simulator's interpreter, and SCRIPT.py handing
    over to the engine; any other program (`vllm`): the program itself starts the engine."""
    if not entrypoint:
        return {}
    program = entrypoint[0]
    path = program if program.startswith("/") else f"/usr/bin/{program}"
    name = program.rsplit("/", 1)[-1]
    if _PYTHON.match(name) and len(entrypoint) > 1 and entrypoint[1].endswith(".py"):
        script = entrypoint[1]
        return {
            path: (LAUNCHER.format(name=name, identity=IDENTITY, args=""), 0o755),
            script: (SCRIPT.format(path=script), 0o644),
        }
    launcher = LAUNCHER.format(name=name, identity=IDENTITY, args="-m cockpit_sim.engine ")
    return {path: (launcher, 0o755)}


def registry_repository(address: str, repository: str) -> str:
    """`ghcr.io/org/name` → `ADDRESS/org/name` (a leading registry host is replaced)."""
    first, _, rest = repository.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        repository = rest
    return f"{address}/{repository}"


def build(daemon: Dockerd, registry: Registry, spec: ImageSpec, work_dir: Path) -> LaneImage:
    """Build the image on `daemon`, push it to `registry`; the image stays on `daemon` tagged."""
    target = registry_repository(registry.address, spec.repository)
    changes = (f"ENV PATH={PATH}",)
    if spec.entrypoint:
        changes += (f"ENTRYPOINT {json.dumps(spec.entrypoint)}",)
    image_id = import_busybox(
        daemon,
        f"{target}:{spec.tag}",
        work_dir,
        labels=spec.labels,
        changes=changes,
        files=launcher_files(spec.entrypoint),
        links={"/lib": "usr/lib", "/lib64": "usr/lib64"},
    )
    daemon.docker("push", f"{target}:{spec.tag}")
    info = json.loads(daemon.docker("image", "inspect", image_id))[0]
    digests = [d for d in info["RepoDigests"] if d.startswith(target + "@")]
    if not digests:
        raise RealDockerError(f"push of {target}:{spec.tag} left no digest")
    ref = digests[0]
    return LaneImage(
        source_ref=spec.source_ref,
        ref=ref,
        image_id=image_id,
        size_bytes=int(info["Size"]),
        compressed_bytes=compressed_size(registry, ref),
    )


def compressed_size(registry: Registry, ref: str) -> int:
    """What a pull downloads: the manifest's layer sizes (0 when the registry cannot say)."""
    name, _, digest = ref.removeprefix(registry.address + "/").partition("@")
    connection = http.client.HTTPConnection(registry.host, registry.port, timeout=10)
    try:
        connection.request("GET", f"/v2/{name}/manifests/{digest}", headers={"Accept": MANIFEST_V2})
        manifest = json.loads(connection.getresponse().read())
    except (OSError, ValueError):
        return 0
    finally:
        connection.close()
    with contextlib.suppress(KeyError, TypeError, ValueError):
        return sum(int(layer["size"]) for layer in manifest["layers"])
    return 0


def _set_key(block: str, key: str, value: str, note: str) -> str:
    line = f"{key} = {value}  # {note}"
    pattern = rf"(?m)^{key}\s*=.*$"
    if re.search(pattern, block):
        return re.sub(pattern, lambda _: line, block, count=1)
    body = block.rstrip("\n")
    return body + "\n" + line + (block[len(body) :] or "\n")


def rewrite_recipe(text: str, image: LaneImage) -> str:
    """The recipe with its [image] pins replaced by the built image's (only those lines change)."""
    match = re.search(r"(?ms)^\[image\]\n(.*?)(?=^\[|\Z)", text)
    if match is None:
        return text
    note = "built by `cockpit sim up --docker real`"
    block = match.group(1)
    block = _set_key(block, "ref", json.dumps(image.ref), note)
    block = _set_key(block, "image_id", json.dumps(image.image_id), note)
    block = _set_key(block, "size_gib", f"{image.size_bytes / GIB:.6f}", note)
    block = _set_key(block, "compressed_gib", f"{image.compressed_bytes / GIB:.6f}", note)
    return text[: match.start(1)] + block + text[match.end(1) :]
