"""`ssh PEER CMD` between simulated nodes, over the real OpenSSH client.

PEER (`dgxK` or `user@dgxK`) resolves through the fleet's `fleet.json` to the peer's loopback
endpoint, authenticated with the fleet's internal key and checked against its known_hosts.
With a link rate set (`COCKPIT_SIM_LINK_MBPS`, or `links["dgxA>dgxB"]` in fleet.json), both
directions are throttled; with an uplink rate (`uplink_mbps` in fleet.json or
COCKPIT_SIM_UPLINK_MBPS) every stream a node sends shares that node's one uplink. Rates are the
real link's, in megabits per second of *virtual* bytes, so a scaled-down image stream takes as
long as the real one would (divided by COCKPIT_SIM_SPEED).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

from cockpit_sim.tools.nodestate import GIB, SIM_BYTES_PER_GIB

SSH = "/usr/bin/ssh"
VALUE_FLAGS = set("bcDEeFIiJLlmOopQRSWw")


def split_command(args: list[str]) -> tuple[list[str], str | None, list[str]]:
    """(ssh options, destination, remote command words)."""
    options: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("-") or arg == "-":
            return options, arg, args[i + 1 :]
        options.append(arg)
        if arg[-1] in VALUE_FLAGS and len(arg) == 2 and i + 1 < len(args):
            options.append(args[i + 1])
            i += 1
        i += 1
    return options, None, []


class Throttle:
    """A token bucket: `take(n)` sleeps so the long-run rate stays at `rate` bytes/s."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.start = time.monotonic()
        self.sent = 0

    def take(self, amount: int) -> None:
        self.sent += amount
        ahead = self.sent / self.rate - (time.monotonic() - self.start)
        if ahead > 0:
            time.sleep(ahead)


class Uplink:
    """The sending node's NIC, shared by every ssh pipe that leaves it: a virtual clock kept in a
    file under flock, so K concurrent streams from one node split its rate (a parallel fan-out
    from one source is then as slow as it is on a real uplink)."""

    def __init__(self, path: Path, rate: float) -> None:
        self.path = path
        self.rate = rate

    def take(self, amount: int) -> None:
        with open(self.path, "a+") as clock:
            fcntl.flock(clock, fcntl.LOCK_EX)
            clock.seek(0)
            now = time.monotonic()
            free_at = max(now, float(clock.read() or 0.0)) + amount / self.rate
            clock.seek(0)
            clock.truncate()
            clock.write(repr(free_at))
        if free_at > now:
            time.sleep(free_at - now)


class Throttles:
    """Every limit a stream passes through (a link, the sender's uplink)."""

    def __init__(self, *limits: Throttle | Uplink | None) -> None:
        self.limits = [limit for limit in limits if limit is not None]

    def take(self, amount: int) -> None:
        for limit in self.limits:
            limit.take(amount)


def uplink_of(fleet: dict[str, object], node_dir: str) -> Uplink | None:
    """This node's shared uplink (`uplink_mbps` in fleet.json or COCKPIT_SIM_UPLINK_MBPS), None
    when unlimited; same units as the link rate."""
    mbps = fleet.get("uplink_mbps") or os.environ.get("COCKPIT_SIM_UPLINK_MBPS")
    if not mbps or not node_dir:
        return None
    return Uplink(Path(node_dir) / "uplink.clock", sim_rate(mbps))  # type: ignore[arg-type]


def pump(source: IO[bytes], sink: IO[bytes], throttle: Throttles, close_sink: bool) -> None:
    try:
        while chunk := source.read1(65536):  # type: ignore[attr-defined]
            throttle.take(len(chunk))
            sink.write(chunk)
            sink.flush()
    except (BrokenPipeError, OSError, ValueError):
        pass
    finally:
        if close_sink:
            with contextlib.suppress(OSError):
                sink.close()


def link_rate(fleet: dict[str, object], src: str, dst: str) -> float | None:
    """Simulated bytes per second for the link src→dst, None when unlimited."""
    links = fleet.get("links") or {}
    assert isinstance(links, dict)
    mbps = links.get(f"{src}>{dst}") or os.environ.get("COCKPIT_SIM_LINK_MBPS")
    return sim_rate(mbps) if mbps else None


def sim_rate(mbps: float | str) -> float:
    """Simulated bytes per second of a real rate in megabits/s of virtual bytes, at this node's
    COCKPIT_SIM_SPEED. A real-Docker node (COCKPIT_SIM_DOCKER=real) streams real image bytes:
    no scaling then."""
    speed = float(os.environ.get("COCKPIT_SIM_SPEED", "1") or 1)
    scale = 1.0 if os.environ.get("COCKPIT_SIM_DOCKER") == "real" else SIM_BYTES_PER_GIB / GIB
    return float(mbps) * 1e6 / 8 * scale * speed


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    fleet_dir = Path(os.environ.get("COCKPIT_SIM_FLEET_DIR", "."))
    options, destination, command = split_command(args)
    if destination is None:
        sys.stderr.write("usage: ssh [options] destination [command [argument ...]]\n")
        return 255
    user, _, peer = destination.rpartition("@")
    fleet = json.loads((fleet_dir / "fleet.json").read_text())
    node = fleet["nodes"].get(peer)
    if node is None:
        sys.stderr.write(f"ssh: Could not resolve hostname {peer}: Name or service not known\n")
        return 255
    argv_ssh = [
        SSH,
        "-i",
        str(fleet_dir / "ssh" / "internal_key"),
        "-o",
        f"UserKnownHostsFile={fleet_dir / 'ssh' / 'known_hosts'}",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        "BatchMode=yes",
        "-o",
        "LogLevel=ERROR",
        "-o",
        "IdentitiesOnly=yes",
        "-p",
        str(node["port"]),
        "-l",
        user or fleet["user"],
        *options,
        node["host"],
        *command,
    ]
    rate = link_rate(fleet, os.environ.get("COCKPIT_SIM_NODE", ""), peer)
    uplink = uplink_of(fleet, os.environ.get("COCKPIT_SIM_NODE_DIR", ""))
    if rate is None and uplink is None:
        os.execv(SSH, argv_ssh)
    link = (lambda: Throttle(rate)) if rate is not None else (lambda: None)
    proc = subprocess.Popen(argv_ssh, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    threading.Thread(
        target=pump,
        args=(sys.stdin.buffer, proc.stdin, Throttles(link(), uplink), True),
        daemon=True,
    ).start()
    reader = threading.Thread(
        target=pump, args=(proc.stdout, sys.stdout.buffer, Throttles(link()), False), daemon=True
    )
    reader.start()
    code = proc.wait()
    reader.join()
    return code
