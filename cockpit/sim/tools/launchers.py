"""Executables for a simulated node's PATH: tiny scripts that import a tool module and run it.

They start `python -S` (no site-packages: the tools need only the standard library), which keeps
each docker/nvidia-smi call in the tens of milliseconds.
"""

from __future__ import annotations

import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[3]
TOOLS = {
    "docker": "cockpit.sim.tools.docker",
    "nvidia-smi": "cockpit.sim.tools.nvidia_smi",
    "ssh": "cockpit.sim.tools.ssh_shim",
    "node-exec": "cockpit.sim.tools.node_exec",
}

TEMPLATE = """#!{python} -S
import os, sys
sys.path.insert(0, {root!r})
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


def write_launchers(bin_dir: Path) -> None:
    """Create bin_dir/{docker,nvidia-smi,ssh,node-exec} for this interpreter and checkout."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, module in TOOLS.items():
        path = bin_dir / name
        path.write_text(
            TEMPLATE.format(python=sys.executable, root=str(PROJECT_ROOT), module=module)
        )
        path.chmod(0o755)
