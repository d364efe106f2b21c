"""`docker logs`: a container's json.log, read from an offset, filtered (`--since`, `--tail`) and
followed (`-f`) until the container stops."""

from __future__ import annotations

import json
import re
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cockpit_sim.tools import dockerfmt
from cockpit_sim.tools.docker.containers import container_state, find_container
from cockpit_sim.tools.docker.options import opt, split_options
from cockpit_sim.tools.docker.output import DockerError
from cockpit_sim.tools.nodestate import NodeState, Record


def parse_since(text: str, now: datetime) -> datetime:
    """`--since`: RFC 3339, a unix timestamp, or a Go duration relative to now (10m, 1h30m)."""
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return datetime.fromtimestamp(float(text), UTC)
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", text)
    if parts and "".join(a + b for a, b in parts) == text:
        scale = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
        return now - timedelta(seconds=sum(float(a) * scale[b] for a, b in parts))
    moment = dockerfmt.parse_time(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def read_log_lines(path: Path, offset: int) -> tuple[list[Record], int]:
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except FileNotFoundError:
        return [], offset
    complete = data.rfind(b"\n") + 1
    lines = [json.loads(line) for line in data[:complete].splitlines() if line]
    return lines, offset + complete


def emit_log(entry: Record, timestamps: bool) -> None:
    text = entry["log"]
    if timestamps:
        text = dockerfmt.rfc3339_nano(dockerfmt.parse_time(entry["time"])) + " " + text
    stream = sys.stdout if entry["stream"] == "stdout" else sys.stderr
    stream.write(text)
    stream.flush()


def follow_logs(
    state: NodeState,
    cid: str,
    *,
    tail: int | None,
    since: datetime | None,
    timestamps: bool,
    follow: bool,
) -> None:
    path = state.containers_dir / cid / "json.log"
    entries, offset = read_log_lines(path, 0)
    if since is not None:
        entries = [e for e in entries if dockerfmt.parse_time(e["time"]) >= since]
    if tail is not None:
        entries = entries[-tail:] if tail > 0 else []
    for entry in entries:
        emit_log(entry, timestamps)
    while follow:
        record = find_container(state, cid)
        running = record is not None and container_state(record).get("Running")
        entries, offset = read_log_lines(path, offset)
        for entry in entries:
            emit_log(entry, timestamps)
        if not running and not entries:
            entries, offset = read_log_lines(path, offset)
            for entry in entries:
                emit_log(entry, timestamps)
            return
        time.sleep(0.1)


def cmd_logs(state: NodeState, args: list[str]) -> int:
    options, names = split_options(args, {"--tail", "-n", "--since", "--until"}, False)
    if len(names) != 1:
        raise DockerError("\"docker logs\" requires exactly 1 argument.\nSee 'docker logs --help'.")
    record = find_container(state, names[0])
    if record is None:
        raise DockerError(f"Error: No such container: {names[0]}")
    tail_text = opt(options, "--tail", "-n")
    since_text = opt(options, "--since")
    follow_logs(
        state,
        record["Id"],
        tail=None if tail_text in (None, "all") else int(tail_text),
        since=parse_since(since_text, datetime.now(UTC)) if since_text else None,
        timestamps="-t" in options or "--timestamps" in options,
        follow="-f" in options or "--follow" in options,
    )
    return 0
