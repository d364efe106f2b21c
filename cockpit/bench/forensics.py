"""What the watchdog records when a point hangs: the seed's §4.1 forensics, collected for us.

The operators needed strace-level digging to learn that their client sat in an idle event loop
with one ESTAB keep-alive socket to the engine and zero bytes queued. Here the same facts are
collected on the spot: process state, the client's TCP connections to the engine port with their
queues, the Python stacks of our own request tasks, and `py-spy dump` of an external client when
py-spy is installed. Parsers are pure; the readers only open /proc files.
"""

from __future__ import annotations

import asyncio
import io
import os
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

_TCP_STATES = {
    "01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1",
    "05": "FIN_WAIT2", "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT",
    "09": "LAST_ACK", "0A": "LISTEN", "0B": "CLOSING",
}  # fmt: skip


@dataclass(frozen=True)
class TcpConn:
    local: str
    remote: str
    remote_port: int
    state: str
    tx_queue: int
    rx_queue: int
    inode: int

    def __str__(self) -> str:
        return (
            f"{self.state} {self.local} -> {self.remote} "
            f"(send-q {self.tx_queue} B, recv-q {self.rx_queue} B)"
        )


def _addr(hex_addr: str) -> tuple[str, int]:
    host, port = hex_addr.split(":")
    if len(host) == 8:
        ip = ".".join(str(b) for b in reversed(bytes.fromhex(host)))
    else:
        words = [bytes.fromhex(host[i : i + 8])[::-1].hex() for i in range(0, 32, 8)]
        joined = "".join(words)
        ip = ":".join(joined[i : i + 4] for i in range(0, 32, 4))
    return ip, int(port, 16)


def parse_proc_net_tcp(text: str) -> list[TcpConn]:
    """Rows of /proc/<pid>/net/tcp or tcp6."""
    out: list[TcpConn] = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10:
            continue
        try:
            local, lport = _addr(fields[1])
            remote, rport = _addr(fields[2])
            tx, rx = (int(x, 16) for x in fields[4].split(":"))
            inode = int(fields[9])
        except ValueError:
            continue
        out.append(
            TcpConn(
                f"{local}:{lport}",
                f"{remote}:{rport}",
                rport,
                _TCP_STATES.get(fields[3].upper(), fields[3]),
                tx,
                rx,
                inode,
            )
        )
    return out


def socket_inodes(pid: int | str) -> set[int]:
    """Inodes of the sockets process `pid` holds open."""
    inodes: set[int] = set()
    fd_dir = Path(f"/proc/{pid}/fd")
    try:
        entries = list(fd_dir.iterdir())
    except OSError:
        return inodes
    for entry in entries:
        try:
            target = os.readlink(entry)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def connections_to(port: int, pid: int | str = "self") -> list[TcpConn]:
    """The process's TCP connections whose remote port is `port`."""
    inodes = socket_inodes(pid)
    conns: list[TcpConn] = []
    for name in ("tcp", "tcp6"):
        try:
            text = Path(f"/proc/{pid}/net/{name}").read_text()
        except OSError:
            continue
        conns.extend(c for c in parse_proc_net_tcp(text) if c.remote_port == port)
    return [c for c in conns if c.inode in inodes]


def process_state(pid: int | str = "self") -> str:
    """`State`, `Threads` and the kernel wait channel of a process."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return f"pid {pid}: gone"
    keep = [ln for ln in status.splitlines() if ln.split(":")[0] in ("Name", "State", "Threads")]
    try:
        wchan = Path(f"/proc/{pid}/wchan").read_text().strip()
    except OSError:
        wchan = "?"
    return "; ".join(" ".join(ln.split()) for ln in keep) + f"; wchan {wchan or '0'}"


def task_stacks(tasks: Iterable[asyncio.Task[object]]) -> str:
    """The Python stacks of our own request tasks, as asyncio prints them."""
    buf = io.StringIO()
    for task in tasks:
        if not task.done():
            task.print_stack(limit=8, file=buf)
    return buf.getvalue().strip()


def py_spy_dump(pid: int, timeout: float = 10.0) -> str | None:
    """`py-spy dump --pid PID` when py-spy is installed; None otherwise."""
    exe = shutil.which("py-spy")
    if exe is None:
        return None
    try:
        done = subprocess.run(
            [exe, "dump", "--pid", str(pid)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"py-spy failed: {exc}"
    return (done.stdout or done.stderr).strip()


def collect(
    engine_port: int,
    pid: int | str = "self",
    tasks: Iterable[asyncio.Task[object]] = (),
    idle_s: float = 0.0,
    engine_note: str = "",
) -> str:
    """One text block with everything known about a hung point."""
    lines = [f"no client progress and no engine counter movement for {idle_s:.1f} s"]
    if engine_note:
        lines.append(f"engine: {engine_note}")
    lines.append(f"client process: {process_state(pid)}")
    conns = connections_to(engine_port, pid)
    lines.append(f"connections to the engine port {engine_port}: {len(conns)}")
    lines.extend(f"  {c}" for c in conns)
    stacks = task_stacks(tasks)
    if stacks:
        lines.append("request task stacks:")
        lines.extend(f"  {ln}" for ln in stacks.splitlines())
    if pid != "self":
        dump = py_spy_dump(int(pid))
        lines.append(dump if dump is not None else "py-spy not installed: no native stack")
    return "\n".join(lines)
