"""`docker stats`: CPU and memory of a container's processes, sampled from /proc."""

from __future__ import annotations

import os
import time
from pathlib import Path

from cockpit_sim.tools import dockerfmt, dockerinfo
from cockpit_sim.tools.docker.containers import container_state, find_container
from cockpit_sim.tools.docker.options import opt, split_options
from cockpit_sim.tools.docker.output import DockerError, out
from cockpit_sim.tools.docker.system import mem_total
from cockpit_sim.tools.nodestate import NodeState, Record


def session_processes(sid: int) -> list[tuple[int, int, int]]:
    """(pid, cpu ticks, rss pages) of every process in session `sid` (a container's processes:
    its main process leads a session of its own)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append((int(entry.name), int(fields[11]) + int(fields[12]), int(fields[21])))
    return found


STATS_SAMPLE_S = 0.5
STATS_TEMPLATE = (
    "table {{.ID}}\t{{.Name}}\t{{.CPUPerc}}\t{{.MemUsage}}\t{{.MemPerc}}\t{{.NetIO}}"
    "\t{{.BlockIO}}\t{{.PIDs}}"
)
STATS_HEADERS = {
    "ID": "CONTAINER ID",
    "Container": "CONTAINER",
    "Name": "NAME",
    "CPUPerc": "CPU %",
    "MemUsage": "MEM USAGE / LIMIT",
    "MemPerc": "MEM %",
    "NetIO": "NET I/O",
    "BlockIO": "BLOCK I/O",
    "PIDs": "PIDS",
}


def stats_rows(chosen: list[tuple[str, Record]], limit: int) -> list[dict[str, str]]:
    """One `docker stats` row per (name as asked, record): CPU from two samples of the
    container's processes STATS_SAMPLE_S apart, memory their resident set (host networking:
    no network counters of its own)."""
    pids = {
        record["Id"]: int(container_state(record).get("Pid") or 0)
        for _, record in chosen
        if container_state(record).get("Running")
    }
    first = {cid: session_processes(pid) for cid, pid in pids.items()}
    time.sleep(STATS_SAMPLE_S if pids else 0)
    second = {cid: session_processes(pid) for cid, pid in pids.items()}
    tick, page = os.sysconf("SC_CLK_TCK"), os.sysconf("SC_PAGE_SIZE")
    rows = []
    for asked, record in chosen:
        cid = record["Id"]
        now = second.get(cid, [])
        before = {p: ticks for p, ticks, _ in first.get(cid, [])}
        ticks = sum(t - before.get(p, t) for p, t, _ in now)
        rss = sum(pages for _, _, pages in now) * page
        running = cid in pids
        rows.append(
            {
                "BlockIO": "0B / 0B",
                "CPUPerc": f"{100 * ticks / tick / STATS_SAMPLE_S:.2f}%",
                "Container": asked,
                "ID": cid[:12],
                "MemPerc": f"{100 * rss / limit:.2f}%" if running and limit else "0.00%",
                "MemUsage": (
                    f"{dockerinfo.bytes_size(rss)} / {dockerinfo.bytes_size(limit)}"
                    if running
                    else "0B / 0B"
                ),
                "Name": record["Name"],
                "NetIO": "0B / 0B",
                "PIDs": str(len(now)),
            }
        )
    return rows


def cmd_stats(state: NodeState, args: list[str]) -> int:
    options, names = split_options(args, {"--format"}, False)
    if names:
        chosen = []
        for name in names:
            record = find_container(state, name)
            if record is None:
                raise DockerError(f"Error response from daemon: No such container: {name}")
            chosen.append((name, record))
    else:
        show_all = "-a" in options or "--all" in options
        chosen = [
            (c["Id"][:12], c)
            for c in reversed(state.containers())
            if show_all or container_state(c).get("Running")
        ]
    template = opt(options, "--format") or STATS_TEMPLATE
    limit = mem_total()
    while True:
        text = dockerfmt.render_rows(template, stats_rows(chosen, limit), STATS_HEADERS)
        if "--no-stream" in options:
            out(text)
            return 0
        out("\x1b[2J\x1b[H" + text)  # the streaming CLI redraws the screen every second
        time.sleep(max(0.0, 1.0 - STATS_SAMPLE_S))
