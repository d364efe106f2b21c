"""What the SSH backend needs to know about a node and about SSH settings.

Protocols, so that the inventory models of `cockpit.config` (or a test's dataclass) fit as-is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


class NodeAddress(Protocol):
    """Where a node's sshd answers; `user` None means ~/.ssh/config or the local user."""

    @property
    def name(self) -> str: ...
    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int | None: ...
    @property
    def user(self) -> str | None: ...


class SshOptions(Protocol):
    """Fleet-wide SSH settings; None/empty means the OpenSSH defaults (~/.ssh/...)."""

    @property
    def known_hosts(self) -> Path | str | None: ...
    @property
    def identity_files(self) -> Sequence[Path | str]: ...
    @property
    def connect_timeout(self) -> float: ...


@dataclass(frozen=True)
class Endpoint:
    """A plain NodeAddress, for callers without an inventory (tests, benchmarks, sim)."""

    name: str
    host: str
    port: int | None = None
    user: str | None = None


@dataclass(frozen=True)
class Settings:
    """A plain SshOptions, for callers without an inventory."""

    known_hosts: Path | str | None = None
    identity_files: Sequence[Path | str] = field(default_factory=tuple)
    connect_timeout: float = 3.0
