"""Executables for a simulated node's PATH: tiny scripts that import a tool module and run it.

They start `python -S` (no site-packages: the tools need only the standard library), which keeps
each docker/nvidia-smi call in the tens of milliseconds. On a real-Docker fleet the node's
`docker` is Debian's client instead (a symlink: another client may come first on the host's
PATH), and its daemon gets the simulated GPU's hook (`cockpit_sim.tools.gpu_hook`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import cockpit

_PRODUCT_ROOT = Path(cockpit.__file__).resolve().parents[1]
_SIM_ROOT = Path(__file__).resolve().parents[2]
IMPORT_ROOTS = tuple(dict.fromkeys((str(_PRODUCT_ROOT), str(_SIM_ROOT))))
"""Where `cockpit` and `cockpit_sim` are imported from (a checkout: the repository and its `sim/`;
an install: site-packages), first on the path of the simulator's processes: the node tools run
`python -S`, without the site-packages that would find them."""
TOOLS = {
    "docker": "cockpit_sim.tools.docker",
    "nvidia-smi": "cockpit_sim.tools.nvidia_smi",
    "ssh": "cockpit_sim.tools.ssh_shim",
    "node-exec": "cockpit_sim.tools.node_exec",
}
GPU_HOOK = "nvidia-container-runtime-hook"
RUNTIME = "cockpit-runc"

TEMPLATE = """#!{python} -S
import os, sys
sys.path[:0] = {roots!r}
from {module} import main
try:
    code = main()
    sys.stdout.flush()
except BrokenPipeError:
    code = 1
except KeyboardInterrupt:
    code = 130
try:
    sys.stdout.flush()
except BrokenPipeError:
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
sys.exit(code)
"""


def _write(path: Path, module: str) -> None:
    path.write_text(TEMPLATE.format(python=sys.executable, roots=list(IMPORT_ROOTS), module=module))
    path.chmod(0o755)


def pythonpath(rest: str | None = None) -> str:
    """A PYTHONPATH of the import roots, then `rest` (an inherited PYTHONPATH)."""
    return os.pathsep.join([*IMPORT_ROOTS, *([rest] if rest else [])])


def write_launchers(bin_dir: Path, docker_client: str | None = None) -> None:
    """Create bin_dir/{docker,nvidia-smi,ssh,node-exec} for this interpreter and checkout;
    with `docker_client`, bin_dir/docker is a symlink to that real client instead."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, module in TOOLS.items():
        if name == "docker" and docker_client:
            (bin_dir / name).symlink_to(docker_client)
        else:
            _write(bin_dir / name, module)


def write_gpu_hook(hook_dir: Path) -> Path:
    """hook_dir/nvidia-container-runtime-hook, for a real Docker daemon's PATH."""
    hook_dir.mkdir(parents=True, exist_ok=True)
    _write(hook_dir / GPU_HOOK, "cockpit_sim.tools.gpu_hook")
    return hook_dir / GPU_HOOK


def write_runtime(bin_dir: Path) -> Path:
    """bin_dir/cockpit-runc: runc with rlimits clamped to the host's (`runc_clamp`)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    _write(bin_dir / RUNTIME, "cockpit_sim.tools.runc_clamp")
    return bin_dir / RUNTIME
