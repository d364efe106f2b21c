"""A node tool for the tool service's tests: each first argument is one behaviour to observe."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time


def _report() -> int:
    print(
        json.dumps(
            {
                "argv": sys.argv,
                "env": {k: v for k, v in os.environ.items() if k.startswith("TARGET_")},
                "names": sorted(os.environ),
                "cwd": os.getcwd(),
                "tty": [os.isatty(fd) for fd in (0, 1, 2)],
                "stdin": sys.stdin is not None,
                "nice": os.getpriority(os.PRIO_PROCESS, 0),
                "umask": os.umask(0),
                "sigint_ignored": signal.getsignal(signal.SIGINT) is signal.SIG_IGN,
                "tz": time.tzname[0],
                "leader": os.getsid(0) == os.getpid() == os.getpgid(0),
                "pid": os.getpid(),
            }
        )
    )
    return 0


def _cat() -> int:
    while chunk := sys.stdin.buffer.read1(1 << 16):
        sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()
    return 0


def _flood() -> int:
    while True:
        sys.stdout.write("x" * 4096)


def _wait(pid_file: str, with_child: bool) -> int:
    pids = [os.getpid()]
    if with_child:
        pids.append(subprocess.Popen(["sleep", "300"]).pid)
    with open(pid_file + ".tmp", "w") as handle:
        handle.write(" ".join(map(str, pids)))
    os.rename(pid_file + ".tmp", pid_file)
    time.sleep(300)
    return 0


def _write(spec: list[str]) -> int:
    """Each `out:TEXT` / `err:TEXT` written and flushed in turn: the order a reader of both sees."""
    for item in spec:
        stream, _, text = item.partition(":")
        target = sys.stdout if stream == "out" else sys.stderr
        target.write(text + "\n")
        target.flush()
    return 0


def quick(argv: list[str]) -> bool:
    """The `quick-…` behaviours are answered in the service's own process."""
    return bool(argv) and argv[0].startswith("quick-")


def main(argv: list[str]) -> int | None:
    match argv:
        case ["report"] | ["quick-report"]:
            return _report()
        case ["write", *spec] | ["quick-write", *spec]:
            return _write(spec)
        case ["quick-big", size]:
            sys.stdout.write("y" * int(size))
            return 0
        case ["quick-exit", code]:
            return int(code)
        case ["quick-raise"]:
            raise RuntimeError("boom")
        case ["exit", code]:
            return int(code)
        case ["cat"]:
            return _cat()
        case ["flood"]:
            return _flood()
        case ["wait", pid_file]:
            return _wait(pid_file, False)
        case ["wait-with-child", pid_file]:
            return _wait(pid_file, True)
        case ["kill", name]:
            os.kill(os.getpid(), signal.Signals[name])
            return 0
        case ["raise"]:
            raise RuntimeError("boom")
        case ["sysexit", text]:
            raise SystemExit(text)
    return 2
