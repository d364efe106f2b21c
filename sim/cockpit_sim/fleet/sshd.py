"""A simulated node's SSH endpoint on Debian's OpenSSH sshd (one non-daemon sshd per node).

Each sshd has its own config, host key, AuthorizedKeysFile and PidFile in the fleet dir, listens
on the node's loopback address only, and forces every command through `node-exec` (the node's
env, then bash; see cockpit_sim.tools.node_exec).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
from pathlib import Path

SSHD = Path("/usr/sbin/sshd")


def sshd_config(
    *,
    host: str,
    port: int,
    host_key: Path,
    authorized_keys: Path,
    pid_file: Path,
    force_command: str,
) -> str:
    return "\n".join(
        [
            f"Port {port}",
            f"ListenAddress {host}",
            f"HostKey {host_key}",
            f"PidFile {pid_file}",
            f"AuthorizedKeysFile {authorized_keys}",
            f"ForceCommand {force_command}",
            "StrictModes no",
            "UsePAM no",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PermitRootLogin prohibit-password",
            "AllowTcpForwarding local",
            "PermitOpen localhost:* 127.0.0.1:* " + host + ":*",
            "X11Forwarding no",
            "PrintMotd no",
            "PrintLastLog no",
            "UseDNS no",
            "MaxSessions 64",
            "MaxStartups 64:30:128",
            "ClientAliveInterval 15",
            "LogLevel ERROR",
            "",
        ]
    )


class OpensshEndpoint:
    """One node's sshd process; `stop` kills it and the sessions it forked."""

    def __init__(self, name: str, host: str, port: int, node_dir: Path, fleet_dir: Path) -> None:
        self.name = name
        self.host = host
        self.port = port
        self._dir = fleet_dir / "sshd"
        self._config = self._dir / f"{name}.conf"
        self._log = self._dir / f"{name}.log"
        force = shlex.join([str(fleet_dir / "bin" / "node-exec"), str(node_dir)])
        self._dir.mkdir(exist_ok=True)
        self._config.write_text(
            sshd_config(
                host=host,
                port=port,
                host_key=node_dir / "ssh" / "ssh_host_ed25519_key",
                authorized_keys=fleet_dir / "ssh" / "authorized_keys",
                pid_file=self._dir / f"{name}.pid",
                force_command=force,
            )
        )
        self._proc: asyncio.subprocess.Process | None = None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    async def start(self) -> None:
        if self.running:
            return
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        with open(self._log, "ab") as log:
            self._proc = await asyncio.create_subprocess_exec(
                str(SSHD),
                "-D",
                "-e",
                "-f",
                str(self._config),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        if not await _listening(self.host, self.port, self._proc):
            await self.stop()
            raise OSError(f"sshd for {self.name} did not listen on {self.host}:{self.port}")

    async def stop(self) -> None:
        """Stop the listener and drop every live connection, as a node going down would.

        sshd's per-connection children call setsid(), so they are not in the listener's process
        group: they are found through /proc and killed first.
        """
        proc, self._proc = self._proc, None
        if proc is None or proc.returncode is not None:
            return
        for pid in _descendants(proc.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
            try:
                await asyncio.wait_for(proc.wait(), 2.0)
                break
            except TimeoutError:
                continue
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


def _descendants(root: int) -> list[int]:
    """Every live descendant of a process, from /proc (children of children included)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, queue = [], [root]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


async def _listening(host: str, port: int, proc: asyncio.subprocess.Process) -> bool:
    for _ in range(100):
        if proc.returncode is not None:
            return False
        try:
            _, writer = await asyncio.open_connection(host, port)
        except OSError:
            await asyncio.sleep(0.05)
            continue
        writer.close()
        return True
    return False
