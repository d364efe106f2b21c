"""The wire format between a node tool's front-end and the fleet's resident tool service.

A call is one connection to the service's unix socket. The front-end sends REQUEST, then the
payload (NUL-terminated strings: the tool's name, argv, the environment), with its stdin, stdout,
stderr and an O_PATH descriptor of its cwd attached (SCM_RIGHTS) to the first byte; the mask says
which of the four it had open. While the tool runs, every byte the front-end sends is a signal it
received, to forward; closing the connection means the caller is gone. The service answers with
REPLY (the tool's wait status) once the tool has exited. `frontend.c` holds the same layout.
"""

from __future__ import annotations

import os
import signal
import struct

REQUEST = struct.Struct("<4sIIIIiII")
"""magic, payload bytes, argc, envc, fd mask, nice, umask, ignored signals (bit N: signal N)"""
REQUEST_MAGIC = b"CKT1"
REPLY = struct.Struct("<4si")  # magic, wait status (as waitpid returns it)
REPLY_MAGIC = b"CKS1"
STDIO = (0, 1, 2)
CWD_BIT = 3  # mask bit of the cwd descriptor (bits 0-2: stdin, stdout, stderr)
MAX_PAYLOAD = 4 << 20
SOCKET_NAME = "tools.sock"  # in the fleet folder, the parent of the front-ends' bin/
FORWARDED = (
    signal.SIGHUP,
    signal.SIGINT,
    signal.SIGQUIT,
    signal.SIGTERM,
    signal.SIGUSR1,
    signal.SIGUSR2,
    signal.SIGALRM,
    signal.SIGWINCH,  # ignored by default; an interactive `ssh PEER` follows the window size
)
"""The signals a front-end catches and hands to its tool (the ones a session, a terminal or
`timeout` sends); SIGKILL cannot be caught: the closed connection stands for it."""
SERVICE_GONE = 255
"""A front-end's exit status when the service is unreachable or dies during the call."""


def encode_request(
    tool: bytes,
    argv: list[bytes],
    environ: list[bytes],
    *,
    mask: int,
    nice: int,
    umask: int,
    ignored: int,
) -> bytes:
    """REQUEST and its payload (`environ`: KEY=VALUE entries), as one buffer."""
    payload = b"".join(word + b"\0" for word in (tool, *argv, *environ))
    header = REQUEST.pack(
        REQUEST_MAGIC, len(payload), len(argv), len(environ), mask, nice, umask, ignored
    )
    return header + payload


def decode_payload(payload: bytes, argc: int, envc: int) -> tuple[str, list[str], dict[str, str]]:
    """(tool, argv, environment) of a request's payload; ValueError when it does not add up."""
    words = [os.fsdecode(w) for w in payload.split(b"\0")]
    if len(words) != 2 + argc + envc or words[-1] != "" or argc < 1:
        raise ValueError("malformed tool request")
    env = dict(entry.partition("=")[::2] for entry in words[1 + argc : 1 + argc + envc])
    return words[0], words[1 : 1 + argc], env
