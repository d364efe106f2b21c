"""The namespaces that give each simulated node its identity, and the mode a fleet runs in.

Per node, one holder process (`unshare --mount --uts … sh identity/enter.sh`, then `sleep
infinity`) owns a mount namespace with the node's identity files bound over the machine's and a
UTS namespace named after the node; every session joins them (`cockpit_sim.tools.nodens`). The
namespaces are per node, not per session, as on a real machine: a `hostname` set in one session
is the node's name in the next.

Modes (the first that works, or the one asked for), reported in fleet.json as `identity`:

- `namespaces`: root creates them (no user namespace);
- `user-namespaces`: an unprivileged user gets them inside a user namespace where it is root
  (`unshare --user --map-root-user`; sessions join it too);
- `wrappers`: neither works (no user namespaces, no overlayfs): only the PATH wrappers answer
  (`uname`, `lscpu`, `ibdev2netdev`, `ip`); the files read are the machine's.

A holder is started with the node's environment, marked as a holder (the fleet's cleanup finds it
by that), and dies with the daemon (`setpriv --pdeathsig KILL`); one that dies is started again.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import time
from pathlib import Path

from cockpit_sim.fleet.cleanup import HOLDER_KEY
from cockpit_sim.fleet.identity import identity_dir
from cockpit_sim.fleet.layout import FleetLayout
from cockpit_sim.tools.node_exec import node_environment

MODES = ("namespaces", "user-namespaces")
WRAPPERS = "wrappers"
READY_TIMEOUT_S = 20.0


def _tool(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin:/sbin:/bin")
    if found is None:
        raise OSError(f"{name} not found (util-linux)")
    return found


def holder_argv(mode: str, script: Path) -> list[str]:
    user = ["--user", "--map-root-user"] if mode == "user-namespaces" else []
    return [
        _tool("setpriv"), "--pdeathsig", "KILL", "--",
        _tool("unshare"), *user, "--mount", "--uts", "--propagation", "private", "--",
        "/bin/sh", str(script),
    ]  # fmt: skip


def enter_prefix(mode: str, pid: int) -> list[str]:
    user = ["--user", "--preserve-credentials"] if mode == "user-namespaces" else []
    return [_tool("nsenter"), f"--target={pid}", *user, "--mount", "--uts"]


class HolderFailed(Exception):
    """A node's namespaces could not be set up (the holder's own words)."""


class NodeNamespaces:
    """The holders of a fleet's nodes: started before the endpoints, kept alive, stopped."""

    def __init__(self, layout: FleetLayout, names: list[str], requested: str = "auto") -> None:
        self.layout = layout
        self.names = names
        self.requested = requested
        self.mode = WRAPPERS
        self.problem = ""
        self._holders: dict[str, subprocess.Popen[bytes]] = {}

    def start(self) -> str:
        """Start every node's holder in the first mode that works; returns the mode."""
        if self.requested == WRAPPERS:
            candidates: tuple[str, ...] = ()
        elif self.requested in MODES:
            candidates = (self.requested,)
        else:
            candidates = MODES if os.geteuid() == 0 else MODES[1:]
        for mode in candidates:
            try:
                self._start_all(mode)
            except (HolderFailed, OSError) as exc:
                self.stop()
                self.problem = f"{mode}: {exc}"
                continue
            self.mode = mode
            return mode
        if self.requested in MODES:
            raise HolderFailed(self.problem)
        self.mode = WRAPPERS
        return WRAPPERS

    def _start_all(self, mode: str) -> None:
        first, *rest = self.names
        self._holders[first] = self._spawn(mode, first)
        self._await_ready({first: self._holders[first]})  # one node proves the mode first
        started = {name: self._spawn(mode, name) for name in rest}
        self._holders.update(started)
        self._await_ready(started)
        for name, proc in self._holders.items():
            self._publish(mode, name, proc.pid)

    def _spawn(self, mode: str, name: str) -> subprocess.Popen[bytes]:
        node_dir = self.layout.node_dir(name)
        env = node_environment(str(node_dir))
        env[HOLDER_KEY] = env.pop("COCKPIT_SIM_FLEET_DIR")  # machinery, not a session's leftover
        return subprocess.Popen(
            holder_argv(mode, identity_dir(node_dir) / "enter.sh"),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=str(node_dir),
            start_new_session=True,
        )

    def _await_ready(self, procs: dict[str, subprocess.Popen[bytes]]) -> None:
        """Every holder prints "ready" once its mounts are in place, or fails with its stderr."""
        waiting = dict(procs)
        deadline = time.monotonic() + READY_TIMEOUT_S
        with selectors.DefaultSelector() as selector:
            for name, proc in waiting.items():
                assert proc.stdout is not None
                selector.register(proc.stdout, selectors.EVENT_READ, name)
            while waiting:
                events = selector.select(max(0.0, deadline - time.monotonic()))
                if not events:
                    raise HolderFailed(f"{', '.join(waiting)}: no namespaces after "
                                       f"{READY_TIMEOUT_S:.0f} s")  # fmt: skip
                for key, _ in events:
                    name = key.data
                    proc = waiting.pop(name)
                    selector.unregister(key.fileobj)
                    line = proc.stdout.readline() if proc.stdout else b""
                    if line.strip() != b"ready":
                        raise HolderFailed(f"{name}: {self._why(proc)}")
                    self._close_pipes(proc)

    @staticmethod
    def _why(proc: subprocess.Popen[bytes]) -> str:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(2.0)
        err = proc.stderr.read().decode(errors="replace").strip() if proc.stderr else ""
        return err.splitlines()[-1] if err else f"exit status {proc.returncode}"

    @staticmethod
    def _close_pipes(proc: subprocess.Popen[bytes]) -> None:
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()

    def _publish(self, mode: str, name: str, pid: int) -> None:
        """Write the node's `enter` file (atomically: sessions read it as they start)."""
        path = identity_dir(self.layout.node_dir(name)) / "enter"
        tmp = path.with_name(f".enter.{os.getpid()}.tmp")
        tmp.write_text("".join(w + "\n" for w in enter_prefix(mode, pid)))
        os.replace(tmp, path)

    def keep(self) -> None:
        """Start again the holder of any node whose holder died (sessions fall back meanwhile)."""
        for name, proc in list(self._holders.items()):
            if proc.poll() is None:
                continue
            fresh = self._spawn(self.mode, name)
            try:
                self._await_ready({name: fresh})
            except HolderFailed:
                fresh.kill()
                fresh.wait()
                continue
            self._holders[name] = fresh
            self._publish(self.mode, name, fresh.pid)

    def stop(self) -> None:
        """Remove the enter files, kill the holders (their namespaces go with them)."""
        for name in self.names:
            (identity_dir(self.layout.node_dir(name)) / "enter").unlink(missing_ok=True)
        for proc in self._holders.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        for proc in self._holders.values():
            proc.wait()
            self._close_pipes(proc)
        self._holders.clear()
