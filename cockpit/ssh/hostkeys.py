"""Explain a refused host key: unknown or changed, and the exact command to trust it."""

from __future__ import annotations

import shlex
from pathlib import Path

import asyncssh

DEFAULT_KNOWN_HOSTS = Path("~/.ssh/known_hosts")


def known_hosts_path(configured: Path | str | None) -> Path:
    """The file asyncssh checks: the configured one, else ~/.ssh/known_hosts."""
    return Path(configured).expanduser() if configured else DEFAULT_KNOWN_HOSTS.expanduser()


def has_recorded_key(known_hosts: Path, host: str, port: int | None) -> bool:
    """True when known_hosts already lists a key for host[:port] (so a refusal means it changed)."""
    if not known_hosts.is_file():
        return False
    try:
        entries = asyncssh.read_known_hosts(str(known_hosts))
    except (OSError, ValueError, asyncssh.KeyImportError):
        return False
    host_keys, ca_keys, *_ = entries.match(host, host, port if port and port != 22 else None)
    return bool(host_keys or ca_keys)


def refusal_message(host: str, port: int | None, known_hosts: Path, changed: bool) -> str:
    """One paragraph: what was refused, why it matters, and how to trust the node on purpose."""
    target = f"{host} port {port or 22}"
    scan = ["ssh-keyscan"] + (["-p", str(port)] if port and port != 22 else []) + [host]
    trust = f"{shlex.join(scan)} >> {shlex.quote(str(known_hosts))}"
    if changed:
        entry = f"[{host}]:{port}" if port and port != 22 else host
        forget = shlex.join(["ssh-keygen", "-R", entry, "-f", str(known_hosts)])
        return (
            f"host key of {target} CHANGED from the one in {known_hosts}: refused "
            "(node reinstalled, or someone in the middle). If you expected it: "
            f"{forget} && {trust}"
        )
    return (
        f"host key of {target} is not in {known_hosts}: refused. "
        f"After checking it is the right machine, trust it with: {trust}"
    )
