"""Errors of the SSH backend: each names the node, so a fleet-wide report stays readable."""

from __future__ import annotations

from cockpit.errors import CockpitError


class SshError(CockpitError):
    """Something went wrong talking to one node."""

    def __init__(self, node: str, message: str) -> None:
        self.node = node
        self.reason = message
        super().__init__(f"{node}: {message}")


class NodeUnreachable(SshError):
    """No SSH session could be opened (refused, timed out, auth failed, backing off)."""


class HostKeyRejected(NodeUnreachable):
    """The node's host key is unknown or changed: refused, never silently accepted."""


class CommandTimeout(SshError):
    """A remote command outlived its timeout; its channel was signalled and closed."""


class ChannelError(SshError):
    """The session is up but a channel (exec, forward) failed or the link dropped under it."""
