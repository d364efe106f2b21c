"""The OpenSSH ForceCommand of a simulated node: the node's environment, then the command in bash
(inside the node's namespaces, `cockpit_sim.tools.nodens`).

sshd runs `node-exec dgxK`; the client's command arrives in $SSH_ORIGINAL_COMMAND. sshd refuses
client signals for forced commands and keeps a command running when only its channel closes, so
this wrapper keeps the command in its own process group, forwards the signals it receives, and
kills the group as soon as its stdout has no reader left (the channel is gone): no orphans.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys

from cockpit_sim.tools.nodens import session_argv

FORWARDED = (
    signal.SIGTERM,
    signal.SIGINT,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)


def node_environment(node_dir: str) -> dict[str, str]:
    """This process's environment plus the node's (`<node dir>/env`, KEY=VALUE lines; no json
    or pathlib here: every command pays this module's start-up)."""
    env = dict(os.environ)
    with open(os.path.join(node_dir, "env")) as handle:
        for line in handle.read().splitlines():
            key, _, value = line.partition("=")
            env[key] = value
    env["PATH"] = env.pop("COCKPIT_SIM_BIN") + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin")
    return env


def kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return


def supervise(pid: int) -> int:
    """Wait for the command; kill its group when stdout loses its reader."""
    pidfd = os.pidfd_open(pid)
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    poller.register(1, 0)
    while True:
        events = dict(poller.poll())
        if pidfd in events:
            break
        if events.get(1, 0) & (select.POLLERR | select.POLLHUP):
            kill_group(pid, signal.SIGHUP)
            kill_group(pid, signal.SIGKILL)
            poller.unregister(1)
    _, status = os.waitpid(pid, 0)
    kill_group(pid, signal.SIGKILL)
    return status


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    env = node_environment(args[0])
    os.chdir(env["HOME"])
    command = os.environ.get("SSH_ORIGINAL_COMMAND")
    shell = ["bash", "-l"] if command is None else ["bash", "-c", command]
    argv = session_argv(args[0], shell, env["HOME"])
    if command is None:
        os.execvpe(argv[0], argv, env)
    pid = os.fork()
    if pid == 0:
        os.setpgid(0, 0)
        os.execvpe(argv[0], argv, env)
    # The child sets its own group too; if it already exec'd, the parent's call fails harmlessly.
    with contextlib.suppress(PermissionError, ProcessLookupError):
        os.setpgid(pid, pid)
    for sig in FORWARDED:
        signal.signal(sig, lambda signum, _frame: kill_group(pid, signum))
    status = supervise(pid)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig != signal.SIGKILL:
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    return os.waitstatus_to_exitcode(status)
