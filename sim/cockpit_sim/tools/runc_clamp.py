"""The OCI runtime of a real-Docker node on a host that may not raise resource limits: runc, with
each container's rlimits clamped to the host's hard limits.

The recipes render `--ulimit memlock=-1` (NCCL over RDMA pins memory). Raising a hard limit needs
CAP_SYS_RESOURCE, which a sandboxed test machine (itself a container) lacks: runc then fails with
`error setting rlimit type 8: operation not permitted`. The node's daemon uses this wrapper as its
default runtime only on such a host (`needs_clamp`): `docker inspect` still shows the recipe's
ulimits (what the cockpit sent), only the kernel limit inside the container is the host's.
"""

from __future__ import annotations

import json
import os
import resource
import sys
from collections.abc import Callable

RUNC = "/usr/sbin/runc"
CAP_SYS_RESOURCE = 24


def needs_clamp(status: str | None = None) -> bool:
    """True when this process cannot raise hard limits (CAP_SYS_RESOURCE not effective)."""
    if status is None:
        with open("/proc/self/status") as handle:
            status = handle.read()
    for line in status.splitlines():
        if line.startswith("CapEff:"):
            return not int(line.split()[1], 16) & (1 << CAP_SYS_RESOURCE)
    return True


def clamp(config: dict[str, object], hard_limit: Callable[[str], int] | None = None) -> bool:
    """Lower the spec's rlimits above the host's hard limit to it; True when one changed.
    `hard_limit(name)` gives the host's hard limit (default: this process's, via getrlimit)."""

    def host_hard(name: str) -> int:
        return resource.getrlimit(getattr(resource, name))[1]

    limit_of = hard_limit or host_hard
    changed = False
    process = config.get("process")
    rlimits = process.get("rlimits") if isinstance(process, dict) else None
    for rlimit in rlimits if isinstance(rlimits, list) else []:
        if not hasattr(resource, str(rlimit.get("type"))):
            continue
        cap = limit_of(str(rlimit["type"]))
        if cap == resource.RLIM_INFINITY:
            continue
        for key in ("hard", "soft"):
            value = int(rlimit.get(key, 0))
            if value < 0 or value > cap:  # RLIM_INFINITY is -1 as a signed JSON number
                rlimit[key] = cap
                changed = True
    return changed


def _bundle(args: list[str]) -> str | None:
    if "create" not in args and "run" not in args:
        return None
    for i, arg in enumerate(args):
        if arg in ("--bundle", "-b") and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--bundle="):
            return arg.split("=", 1)[1]
    return "."


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    bundle = _bundle(args)
    if bundle is not None:
        path = os.path.join(bundle, "config.json")
        with open(path) as handle:
            config = json.load(handle)
        if clamp(config):
            with open(path, "w") as handle:
                json.dump(config, handle)
    os.execv(RUNC, [RUNC, *args])
    return 127
