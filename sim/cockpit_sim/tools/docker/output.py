"""What the simulated `docker` prints: its output, its errors, and the DockerError that ends a
command with the exit status the CLI gives."""

from __future__ import annotations

import sys


class DockerError(Exception):
    """A failure printed as the CLI prints it, with its exit status."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


def err(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def out(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()
