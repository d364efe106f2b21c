"""The simulated `nvidia-smi` of one GB10 node.

The GPU follows the load the simulated engine publishes in `$COCKPIT_SIM_NODE_DIR/gpu_load.json`
({"ts", "util", "power_w", "sm_clock_mhz", "mem_used_mib", "pid", "phase"}); a stale or absent
file reads as idle. Temperature follows power through a first-order lag (state kept in
gpu_thermal.json so separate invocations agree). Memory fields read `[N/A]`: GB10 memory is
unified, and real nvidia-smi says so. Forms: the summary table, `-L`/`--list-gpus`, `-q`
(`-d SECTION,…`), `--query-gpu`, `--query-compute-apps` (the process is the container's main
process as the container runs it, e.g. `python3`), loops (`-l`, `-lms`); an option it does not
know is refused as the real one refuses it, never answered with the table.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from cockpit_sim.tools.nodestate import pid_alive, write_json_atomic

NA = "[N/A]"
DRIVER = "580.95.05"
COMPUTE_CAP = "12.1"
CUDA = "13.0"
BUS_ID = "0000000F:01:00.0"
IDLE_W = 11.17
IDLE_C = 35.0
IDLE_SM_MHZ = 208
MAX_SM_MHZ = 3003
C_PER_W = 0.32  # steady-state rise above idle per watt above idle
THERMAL_TAU_S = 20.0
STALE_S = 5.0


class Sample(NamedTuple):  # not a dataclass: `dataclasses` costs every call ~14 ms of imports
    """One reading of the GPU."""

    node: str
    moment: float
    util: int
    power_w: float
    sm_mhz: int
    temp_c: float
    mem_used_mib: int | None
    pid: int | None
    process_name: str


def read_load(node_dir: Path, now: float) -> dict[str, float | int | str]:
    """The engine's published load, or {} when stale/absent (an idle GPU)."""
    try:
        load = json.loads((node_dir / "gpu_load.json").read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    if now - float(load.get("ts", 0)) > STALE_S:
        return {}
    pid = int(load.get("pid") or 0)
    if pid and not pid_alive(pid):
        return {}
    return load


def idle_power(now: float) -> float:
    """Idle draw wobbles by a few hundredths of a watt, as the real sensor does."""
    return IDLE_W + 0.04 * math.sin(now / 7.0)


def settle(previous: float, target: float, dt: float, speed: float) -> float:
    """First-order thermal lag towards `target`; `speed` runs the simulated clock faster."""
    if dt <= 0:
        return previous
    return target + (previous - target) * math.exp(-dt * speed / THERMAL_TAU_S)


def take_sample(node_dir: Path, node: str, speed: float, now: float) -> Sample:
    load = read_load(node_dir, now)
    power = float(load.get("power_w", idle_power(now)))
    target = IDLE_C + C_PER_W * max(0.0, power - IDLE_W)
    thermal_path = node_dir / "gpu_thermal.json"
    try:
        thermal = json.loads(thermal_path.read_text())
        temp = settle(float(thermal["temp"]), target, now - float(thermal["ts"]), speed)
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        temp = IDLE_C  # no reading yet: the GPU was idle before
    with contextlib.suppress(OSError):
        write_json_atomic(thermal_path, {"ts": now, "temp": temp})
    pid = int(load.get("pid") or 0) or None
    name = str(load.get("process_name") or _container_process(node_dir, pid) or _comm(pid) or "")
    return Sample(
        node=node,
        moment=now,
        util=int(load.get("util", 0)),
        power_w=power,
        sm_mhz=int(load.get("sm_clock_mhz", IDLE_SM_MHZ)),
        temp_c=temp,
        mem_used_mib=int(load["mem_used_mib"]) if "mem_used_mib" in load else None,
        pid=pid,
        process_name=name,
    )


def _container_process(node_dir: Path, pid: int | None) -> str:
    """The main process of the running container whose pid this is, as the container runs it
    (its entrypoint's first word): what nvidia-smi shows for a containerised process."""
    if not pid:
        return ""
    try:
        containers = json.loads((node_dir / "containers.json").read_text())
    except (OSError, ValueError):
        return ""
    for record in containers:
        if record.get("State", {}).get("Pid") == pid:
            return str(record.get("Path") or "")
    return ""


def _comm(pid: int | None) -> str:
    if not pid:
        return ""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    except OSError:
        return ""


def _uuid(node: str) -> str:
    import hashlib

    h = hashlib.sha256(node.encode()).hexdigest()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


Field = tuple[str, str, Callable[[Sample], str]]


def _timestamp(s: Sample) -> str:
    return datetime.fromtimestamp(s.moment).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]


GPU_FIELDS: dict[str, Field] = {
    "timestamp": ("timestamp", "", _timestamp),
    "driver_version": ("driver_version", "", lambda s: DRIVER),
    "count": ("count", "", lambda s: "1"),
    "name": ("name", "", lambda s: "NVIDIA GB10"),
    "serial": ("serial", "", lambda s: NA),
    "uuid": ("uuid", "", lambda s: _uuid(s.node)),
    "pci.bus_id": ("pci.bus_id", "", lambda s: BUS_ID),
    "index": ("index", "", lambda s: "0"),
    "pstate": ("pstate", "", lambda s: "P0" if s.util > 0 else "P8"),
    "persistence_mode": ("persistence_mode", "", lambda s: "Enabled"),
    "compute_mode": ("compute_mode", "", lambda s: "Default"),
    "fan.speed": ("fan.speed", "%", lambda s: NA),
    "memory.total": ("memory.total", "MiB", lambda s: NA),
    "memory.used": ("memory.used", "MiB", lambda s: NA),
    "memory.free": ("memory.free", "MiB", lambda s: NA),
    "memory.reserved": ("memory.reserved", "MiB", lambda s: NA),
    "utilization.gpu": ("utilization.gpu", "%", lambda s: str(s.util)),
    "utilization.memory": ("utilization.memory", "%", lambda s: NA),
    "temperature.gpu": ("temperature.gpu", "", lambda s: str(round(s.temp_c))),
    "temperature.memory": ("temperature.memory", "", lambda s: "N/A"),
    "power.draw": ("power.draw", "W", lambda s: f"{s.power_w:.2f}"),
    "power.draw.instant": ("power.draw.instant", "W", lambda s: f"{s.power_w:.2f}"),
    "power.draw.average": ("power.draw.average", "W", lambda s: f"{s.power_w:.2f}"),
    "power.limit": ("power.limit", "W", lambda s: NA),
    "enforced.power.limit": ("enforced.power.limit", "W", lambda s: NA),
    "clocks.sm": ("clocks.current.sm", "MHz", lambda s: str(s.sm_mhz)),
    "clocks.gr": ("clocks.current.graphics", "MHz", lambda s: str(s.sm_mhz)),
    "clocks.mem": ("clocks.current.memory", "MHz", lambda s: NA),
    "clocks.video": ("clocks.current.video", "MHz", lambda s: str(min(s.sm_mhz, 1785))),
    "clocks.max.sm": ("clocks.max.sm", "MHz", lambda s: str(MAX_SM_MHZ)),
    "clocks.max.gr": ("clocks.max.graphics", "MHz", lambda s: str(MAX_SM_MHZ)),
    "clocks.max.mem": ("clocks.max.memory", "MHz", lambda s: NA),
    "compute_cap": ("compute_cap", "", lambda s: COMPUTE_CAP),
}
ALIASES = {
    "gpu_name": "name",
    "gpu_uuid": "uuid",
    "gpu_bus_id": "pci.bus_id",
    "clocks.current.sm": "clocks.sm",
    "clocks.current.graphics": "clocks.gr",
    "clocks.graphics": "clocks.gr",
    "clocks.current.memory": "clocks.mem",
    "clocks.memory": "clocks.mem",
    "clocks.current.video": "clocks.video",
    "clocks.max.graphics": "clocks.max.gr",
    "clocks.max.memory": "clocks.max.mem",
    "persistence-mode": "persistence_mode",
}
APP_FIELDS: dict[str, Field] = {
    "pid": ("pid", "", lambda s: str(s.pid)),
    "process_name": ("process_name", "", lambda s: s.process_name),
    "name": ("process_name", "", lambda s: s.process_name),
    "used_gpu_memory": (
        "used_gpu_memory",
        "MiB",
        lambda s: NA if s.mem_used_mib is None else str(s.mem_used_mib),
    ),
    "used_memory": (
        "used_gpu_memory",
        "MiB",
        lambda s: NA if s.mem_used_mib is None else str(s.mem_used_mib),
    ),
    "gpu_uuid": ("gpu_uuid", "", lambda s: _uuid(s.node)),
    "gpu_bus_id": ("gpu_bus_id", "", lambda s: BUS_ID),
}


class UsageError(Exception):
    """Bad arguments, reported as nvidia-smi reports them (exit status 2)."""


def resolve_fields(names: str, table: dict[str, Field]) -> list[Field]:
    fields = []
    for raw in names.split(","):
        name = raw.strip()
        key = ALIASES.get(name, name) if table is GPU_FIELDS else name
        if key not in table:
            raise UsageError(f'Field "{name}" is not a valid field to query.')
        fields.append(table[key])
    return fields


def csv_header(fields: list[Field]) -> str:
    return ", ".join(f"{label} [{unit}]" if unit else label for label, unit, _ in fields)


def csv_row(fields: list[Field], sample: Sample, units: bool) -> str:
    cells = []
    for _, unit, value in fields:
        text = value(sample)
        if units and unit and text not in (NA, "N/A"):
            text = f"{text} {unit}" if unit != "%" else f"{text} %"
        cells.append(text)
    return ", ".join(cells)


def _power_cell(sample: Sample, pstate: str) -> str:
    head = f" N/A   {round(sample.temp_c):>2}C    {pstate}"
    return head + f"{round(sample.power_w)}W /  N/A".rjust(41 - len(head) - 2) + "  "


def _row(left: str, middle: str, right: str) -> str:
    return f"|{left:<41}|{middle:<24}|{right:<22}|"


def summary(sample: Sample) -> str:
    """The default table, as a GB10 prints it (unified memory: `Not Supported`)."""
    bar = "+" + "-" * 41 + "+" + "-" * 24 + "+" + "-" * 22 + "+"
    wide = "+" + "-" * 89 + "+"
    stamp = datetime.fromtimestamp(sample.moment).strftime("%a %b %d %H:%M:%S %Y")
    pstate = "P0" if sample.util > 0 else "P8"
    version = (
        f" NVIDIA-SMI {DRIVER}              Driver Version: {DRIVER}      CUDA Version: {CUDA}"
    )
    lines = [
        f"{stamp}       ",
        wide,
        f"|{version:<89}|",
        bar,
        _row(
            " GPU  Name                 Persistence-M",
            " Bus-Id          Disp.A",
            " Volatile Uncorr. ECC",
        ),
        _row(
            " Fan  Temp   Perf          Pwr:Usage/Cap",
            "           Memory-Usage",
            " GPU-Util  Compute M.",
        ),
        _row("", "", "               MIG M."),
        "|" + "=" * 41 + "+" + "=" * 24 + "+" + "=" * 22 + "|",
        _row(
            "   0  NVIDIA GB10                    On", f"   {BUS_ID} Off", "                  N/A"
        ),
        _row(
            _power_cell(sample, pstate),
            " Not Supported",
            f"{sample.util}%".rjust(8) + "      Default",
        ),
        _row("", "", "                  N/A"),
        bar,
        "",
        wide,
        f"|{' Processes:':<89}|",
        f"|{'  GPU   GI   CI              PID   Type   Process name':<78}GPU Memory |",
        f"|{'        ID   ID':<78}Usage      |",
        "|" + "=" * 89 + "|",
    ]
    if sample.pid:
        memory = "N/A" if sample.mem_used_mib is None else f"{sample.mem_used_mib}MiB"
        name = sample.process_name[:33]
        lines.append(f"|    0   N/A  N/A  {sample.pid:>15}      C   {name:<33}{memory:>12} |")
    else:
        lines.append(f"|{'  No running processes found':<89}|")
    lines.append(wide)
    return "\n".join(lines) + "\n"


def list_gpus(sample: Sample) -> str:
    """`nvidia-smi -L`: one line per GPU (a GB10 has one)."""
    return f"GPU 0: NVIDIA GB10 (UUID: {_uuid(sample.node)})\n"


def _kv(indent: int, label: str, value: str) -> str:
    return f"{' ' * indent + label:<42}: {value}\n"


QUERY_SECTIONS = ("PERFORMANCE", "MEMORY", "COMPUTE", "UTILIZATION", "TEMPERATURE", "POWER",
                  "CLOCK", "PIDS")  # fmt: skip


def query_report(sample: Sample, sections: list[str] | None = None) -> str:
    """`nvidia-smi -q` as a GB10 prints it (`-d` keeps only the named sections)."""
    pstate = "P0" if sample.util > 0 else "P8"
    stamp = datetime.fromtimestamp(sample.moment).strftime("%a %b %d %H:%M:%S %Y")
    out = "\n==============NVSMI LOG==============\n\n"
    out += _kv(0, "Timestamp", stamp) + _kv(0, "Driver Version", DRIVER)
    out += _kv(0, "CUDA Version", CUDA) + "\n" + _kv(0, "Attached GPUs", "1")
    out += f"GPU {BUS_ID}\n"
    if sections is None:
        out += _kv(4, "Product Name", "NVIDIA GB10") + _kv(4, "Product Brand", "NVIDIA")
        out += _kv(4, "Product Architecture", "Blackwell")
        out += _kv(4, "Persistence Mode", "Enabled")
        out += _kv(4, "GPU UUID", _uuid(sample.node)) + _kv(4, "Minor Number", "0")
        out += f"{'    PCI':<42}\n" + _kv(8, "Bus", "0x01") + _kv(8, "Device", "0x00")
        out += _kv(8, "Domain", "0x000F") + _kv(8, "Bus Id", BUS_ID)
    power, sm = f"{sample.power_w:.2f} W", f"{sample.sm_mhz} MHz"
    video, top = f"{min(sample.sm_mhz, 1785)} MHz", f"{MAX_SM_MHZ} MHz"
    parts = {
        "PERFORMANCE": _kv(4, "Performance State", pstate),
        "MEMORY": _group("FB Memory Usage", [(k, "N/A") for k in ("Total", "Reserved", "Used",
                                                                    "Free")]),
        "COMPUTE": _kv(4, "Compute Mode", "Default"),
        "UTILIZATION": _group("Utilization", [("GPU", f"{sample.util} %"), ("Memory", "N/A")]),
        "TEMPERATURE": _group("Temperature", [("GPU Current Temp", f"{round(sample.temp_c)} C")]),
        "POWER": _group("GPU Power Readings", [("Average Power Draw", power),
                        ("Instantaneous Power Draw", power), ("Current Power Limit", "N/A")]),
        "CLOCK": _group("Clocks", [("Graphics", sm), ("SM", sm), ("Memory", "N/A"),
                                   ("Video", video)])
        + _group("Max Clocks", [("Graphics", top), ("SM", top), ("Memory", "N/A")]),
        "PIDS": _processes(sample),
    }  # fmt: skip
    for name in QUERY_SECTIONS:
        if sections is None or name in sections:
            out += parts[name]
    return out + "\n"


def _group(title: str, rows: list[tuple[str, str]]) -> str:
    return f"    {title}\n" + "".join(_kv(8, label, value) for label, value in rows)


def _processes(sample: Sample) -> str:
    if not sample.pid:
        return _kv(4, "Processes", "None")
    memory = "N/A" if sample.mem_used_mib is None else f"{sample.mem_used_mib} MiB"
    return (
        "    Processes\n" + _kv(8, "GPU instance ID", "N/A") + _kv(8, "Compute instance ID", "N/A")
        + _kv(8, "Process ID", str(sample.pid)) + _kv(12, "Type", "C")
        + _kv(12, "Name", sample.process_name) + _kv(12, "Used GPU Memory", memory)
    )  # fmt: skip


TAKES_VALUE = {"-l", "--loop", "-lms", "--loop-ms", "--format", "--query-gpu",
               "--query-compute-apps", "-i", "--id", "-d", "--display"}  # fmt: skip
FLAGS = {"-L", "--list-gpus", "-q", "--query"}
INVALID = "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help."


def parse_args(args: list[str]) -> dict[str, str]:
    """Options as a dict (`--x=v`, `--x v`, `-l N`, `-lms N`); an unknown one is refused."""
    parsed: dict[str, str] = {}
    i = 0
    while i < len(args):
        name, eq, value = args[i].partition("=")
        if name in TAKES_VALUE and not eq:
            i += 1
            if i >= len(args):
                raise UsageError(f"Option {name} requires an argument.")
            value = args[i]
        elif name in FLAGS and not eq:
            value = "1"
        elif name not in TAKES_VALUE:
            raise UsageError(INVALID)
        parsed[name] = value
        i += 1
    return parsed


LOOPS = frozenset({"-l", "--loop", "-lms", "--loop-ms"})


def quick(args: list[str]) -> bool:
    """Every form but the loops reads the node's files once: the tool service answers it
    without a fork (`cockpit_sim.tools.service.Quick`)."""
    return not any(arg.split("=", 1)[0] in LOOPS for arg in args)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    node_dir = Path(os.environ.get("COCKPIT_SIM_NODE_DIR", "."))
    node = os.environ.get("COCKPIT_SIM_NODE", "dgx")
    speed = float(os.environ.get("COCKPIT_SIM_SPEED", "1") or 1)
    try:
        options = parse_args(args)
        interval = None
        if "-l" in options or "--loop" in options:
            interval = float(options.get("-l") or options.get("--loop") or 5)
        if "-lms" in options or "--loop-ms" in options:
            interval = float(options.get("-lms") or options.get("--loop-ms") or 1000) / 1000
        fmt = [p.strip() for p in options.get("--format", "").split(",") if p.strip()]
        query = options.get("--query-gpu")
        apps = options.get("--query-compute-apps")
        if (query or apps) and "csv" not in fmt:
            raise UsageError('"--format" option must be specified with csv.')
        listing = "-L" in options or "--list-gpus" in options
        report = "-q" in options or "--query" in options
        display = options.get("-d") or options.get("--display")
        sections = [d.strip().upper() for d in display.split(",")] if display else None
        if sections and not (report and set(sections) <= set(QUERY_SECTIONS)):
            raise UsageError(INVALID)
        if sum(map(bool, (query, apps, listing, report))) > 1:
            raise UsageError(INVALID)
        fields = (
            resolve_fields(query or apps or "", GPU_FIELDS if query else APP_FIELDS)
            if (query or apps)
            else []
        )
    except UsageError as exc:
        sys.stdout.write(f"{exc}\n\n")
        return 2
    header = "noheader" not in fmt
    units = "nounits" not in fmt
    out = sys.stdout
    try:
        first = True
        while True:
            sample = take_sample(node_dir, node, speed, time.time())
            if query:
                text = csv_header(fields) + "\n" if header and first else ""
                text += csv_row(fields, sample, units) + "\n"
            elif apps:
                text = csv_header(fields) + "\n" if header and first else ""
                text += csv_row(fields, sample, units) + "\n" if sample.pid else ""
            elif listing:
                out.write(list_gpus(sample))
                return 0
            elif report:
                text = query_report(sample, sections)
            else:
                text = summary(sample)
            out.write(text)
            out.flush()
            first = False
            if interval is None:
                return 0
            time.sleep(interval)
    except (BrokenPipeError, KeyboardInterrupt):
        return 0
