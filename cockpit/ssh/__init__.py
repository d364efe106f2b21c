"""Async SSH backend: one connection per node, run / stream / forward. Knows nothing of GPUs."""

from cockpit.backoff import Backoff  # the pool spaces its reconnects with it
from cockpit.ssh.address import Endpoint, NodeAddress, Settings, SshOptions
from cockpit.ssh.errors import (
    ChannelError,
    CommandTimeout,
    HostKeyRejected,
    NodeUnreachable,
    SshError,
)
from cockpit.ssh.pool import Command, Result, SshPool, to_shell
from cockpit.ssh.state import Link, NodeState
from cockpit.ssh.stream import LineStream

__all__ = [
    "Backoff",
    "ChannelError",
    "Command",
    "CommandTimeout",
    "Endpoint",
    "HostKeyRejected",
    "LineStream",
    "Link",
    "NodeAddress",
    "NodeState",
    "NodeUnreachable",
    "Result",
    "Settings",
    "SshError",
    "SshOptions",
    "SshPool",
    "to_shell",
]
