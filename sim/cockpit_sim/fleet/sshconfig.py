"""`<fleet dir>/ssh_config`: the fleet's nodes for an ordinary OpenSSH client and the peer tools.

`ssh -F D/ssh_config dgx3 CMD` (or an `Include` of it in ~/.ssh/config) reaches dgx3 as on a real
fleet: its loopback address and port, the fleet's user and client key, host keys checked against
the fleet's known_hosts (never trusted on first use).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def ssh_config(root: Path, hosts: Mapping[str, str], port: int, user: str) -> str:
    """One `Host` block per node; paths are absolute so the file works from any folder."""
    blocks = ["# The simulated fleet's nodes, written by `cockpit sim up`: ssh -F THIS_FILE dgx1\n"]
    for name, host in hosts.items():
        blocks.append(
            f"Host {name}\n"
            f"    HostName {host}\n"
            f"    Port {port}\n"
            f"    User {user}\n"
            f'    IdentityFile "{root / "client_key"}"\n'
            "    IdentitiesOnly yes\n"
            f'    UserKnownHostsFile "{root / "known_hosts"}"\n'
            "    StrictHostKeyChecking yes\n"
        )
    return "\n".join(blocks)


def write_ssh_config(root: Path, hosts: Mapping[str, str], port: int, user: str) -> None:
    (root / "ssh_config").write_text(ssh_config(root, hosts, port, user))
