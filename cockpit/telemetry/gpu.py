"""nvidia-smi CSV and /proc/meminfo text → GPU samples and a unified-memory-aware memory view.

A GB10 (DGX Spark) has one pool of memory shared by CPU and GPU: nvidia-smi prints `[N/A]` for
`memory.*` and `Not Supported` in its summary table, so the node's memory must come from the OS.
Every parser here takes text and returns frozen records; an unreadable value becomes None and an
unreadable line is skipped, never an exception.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

# Query names (as passed to --query-gpu, or as echoed in the CSV header) → GpuSample field.
_GPU_FIELDS: dict[str, str] = {
    "index": "index",
    "name": "name",
    "uuid": "uuid",
    "timestamp": "timestamp",
    "utilization.gpu": "utilization_pct",
    "temperature.gpu": "temperature_c",
    "power.draw": "power_w",
    "power.draw.instant": "power_w",
    "power.draw.average": "power_w",
    "clocks.sm": "clock_sm_mhz",
    "clocks.current.sm": "clock_sm_mhz",
    "clocks.mem": "clock_mem_mhz",
    "clocks.current.memory": "clock_mem_mhz",
    "memory.total": "memory_total_mib",
    "memory.used": "memory_used_mib",
    "memory.free": "memory_free_mib",
}
_TEXT_FIELDS = {"name", "uuid", "timestamp"}
_MISSING = {"", "n/a", "[n/a]", "not supported", "[not supported]", "[unknown error]", "err!"}
_UNIT_RE = re.compile(r"\s*(%|W|MiB|MHz|C|KiB|GiB)$")
_HEADER_UNIT_RE = re.compile(r"\s*\[[^\]]*\]$")

GPU_QUERY_FIELDS: tuple[str, ...] = (
    "index",
    "name",
    "utilization.gpu",
    "temperature.gpu",
    "power.draw",
    "clocks.sm",
    "clocks.mem",
    "memory.total",
    "memory.used",
    "memory.free",
)
"""The default field list for `--query-gpu=` (join with commas); parsers accept any subset/order."""


@dataclass(frozen=True)
class GpuSample:
    """One GPU at one instant; None where nvidia-smi had no value (GB10 memory is `[N/A]`)."""

    index: int | None = None
    name: str | None = None
    uuid: str | None = None
    timestamp: str | None = None
    utilization_pct: float | None = None
    temperature_c: float | None = None
    power_w: float | None = None
    clock_sm_mhz: float | None = None
    clock_mem_mhz: float | None = None
    memory_total_mib: float | None = None
    memory_used_mib: float | None = None
    memory_free_mib: float | None = None

    @property
    def has_memory(self) -> bool:
        """True when nvidia-smi reported numeric memory (discrete GPU), False on unified memory."""
        return self.memory_total_mib is not None and self.memory_used_mib is not None


@dataclass(frozen=True)
class ComputeApp:
    """A process from `--query-compute-apps=pid,process_name,used_gpu_memory`."""

    pid: int
    process_name: str
    used_mib: float | None


@dataclass(frozen=True)
class MemInfo:
    """The OS view of memory from /proc/meminfo, in bytes (used = total − available)."""

    total_bytes: int
    available_bytes: int
    free_bytes: int | None
    swap_used_bytes: int | None = None  # SwapTotal − SwapFree (0 on a node without swap)

    @property
    def used_bytes(self) -> int:
        return max(self.total_bytes - self.available_bytes, 0)


@dataclass(frozen=True)
class MemoryView:
    """A node's memory as the cockpit shows it, whichever source had numbers."""

    source: Literal["nvidia-smi", "meminfo"]
    total_mib: float
    used_mib: float
    gpu_apps_mib: float | None = None

    @property
    def free_mib(self) -> float:
        return max(self.total_mib - self.used_mib, 0.0)

    @property
    def used_pct(self) -> float:
        return 100.0 * self.used_mib / self.total_mib if self.total_mib > 0 else 0.0


def _canonical_field(cell: str) -> str:
    """`memory.total [MiB]` → `memory.total` (header cells carry units in brackets)."""
    return _HEADER_UNIT_RE.sub("", cell.strip()).strip().lower()


def _number(cell: str) -> float | None:
    text = cell.strip()
    if text.lower() in _MISSING:
        return None
    text = _UNIT_RE.sub("", text)
    try:
        return float(text)
    except ValueError:
        return None


def _split(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().split(",")]


_HEADER_CELL_RE = re.compile(r"^[a-z][a-z0-9_.]*(?:\s*\[[^\]]*\])?$")


def _is_header(cells: Sequence[str]) -> bool:
    """Every cell a query name (known or not, e.g. `pstate`), at least one of them known."""
    return all(_HEADER_CELL_RE.match(c) for c in cells) and any(
        _canonical_field(c) in _GPU_FIELDS for c in cells
    )


def _sample(fields: Sequence[str], cells: Sequence[str]) -> GpuSample | None:
    if len(cells) != len(fields):
        return None
    values: dict[str, object] = {}
    numeric_seen = False
    for field, cell in zip(fields, cells, strict=True):
        attr = _GPU_FIELDS.get(field)
        if attr is None:
            continue
        if attr in _TEXT_FIELDS:
            values[attr] = None if cell.lower() in _MISSING else cell
        elif attr == "index":
            number = _number(cell)
            if number is None:
                return None
            values[attr] = int(number)
            numeric_seen = True
        else:
            number = _number(cell)
            if number is None and cell.lower() not in _MISSING:
                return None  # garbage, not a missing value
            values[attr] = number
            numeric_seen = numeric_seen or number is not None
    if not numeric_seen and "name" not in values:
        return None
    return GpuSample(**values)  # type: ignore[arg-type]


class GpuCsvStream:
    """Line-by-line reader for `nvidia-smi --query-gpu=... --format=csv -lms N` (loop mode).

    The header may appear once, repeat, or be absent (`noheader`, then the caller's field list is
    used). Not thread-safe; feed it from the one task that reads the channel.
    """

    def __init__(self, fields: Sequence[str] | None = None) -> None:
        self._fields: tuple[str, ...] | None = (
            tuple(_canonical_field(f) for f in fields) if fields else None
        )

    def feed(self, line: str) -> GpuSample | None:
        """Return the sample on `line`, or None for a header, blank or garbage line."""
        cells = _split(line)
        if not line.strip():
            return None
        if _is_header(cells):
            self._fields = tuple(_canonical_field(c) for c in cells)
            return None
        if self._fields is None:
            return None
        return _sample(self._fields, cells)


def parse_query_gpu(text: str, fields: Sequence[str] | None = None) -> list[GpuSample]:
    """Parse `--query-gpu` CSV output (header or noheader, units or nounits).

    `fields` is the query list the caller used; it is only needed for the noheader form.
    """
    stream = GpuCsvStream(fields)
    return [s for s in (stream.feed(line) for line in text.splitlines()) if s is not None]


def parse_compute_apps(text: str) -> list[ComputeApp]:
    """Parse `--query-compute-apps=pid,process_name,used_gpu_memory --format=csv[,noheader]...`."""
    apps: list[ComputeApp] = []
    for line in text.splitlines():
        cells = _split(line)
        if len(cells) < 3 or not cells[0].isdigit():
            continue  # header, "No running processes found", garbage
        name = ",".join(cells[1:-1])
        apps.append(ComputeApp(pid=int(cells[0]), process_name=name, used_mib=_number(cells[-1])))
    return apps


_MEMINFO_RE = re.compile(r"^(\w+):\s+(\d+)(?:\s+kB)?\s*$")


def parse_meminfo(text: str) -> MemInfo | None:
    """Parse /proc/meminfo; None when MemTotal or MemAvailable is missing."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        match = _MEMINFO_RE.match(line.strip())
        if match:
            values[match.group(1)] = int(match.group(2)) * 1024
    if "MemTotal" not in values or "MemAvailable" not in values:
        return None
    return MemInfo(
        total_bytes=values["MemTotal"],
        available_bytes=values["MemAvailable"],
        free_bytes=values.get("MemFree"),
        swap_used_bytes=(
            max(values["SwapTotal"] - values["SwapFree"], 0)
            if "SwapTotal" in values and "SwapFree" in values
            else None
        ),
    )


def node_memory_view(
    gpus: Iterable[GpuSample],
    meminfo: MemInfo | None,
    apps: Iterable[ComputeApp] = (),
) -> MemoryView | None:
    """The node's memory: from nvidia-smi when every GPU reports numbers, else from the OS.

    On unified memory (GB10) the OS view is the only truthful one; the compute apps' usage,
    when numeric, tells how much of it the GPU processes hold.
    """
    gpu_list = list(gpus)
    app_values = [a.used_mib for a in apps if a.used_mib is not None]
    apps_mib = sum(app_values) if app_values else None
    if gpu_list and all(g.has_memory for g in gpu_list):
        return MemoryView(
            source="nvidia-smi",
            total_mib=sum(g.memory_total_mib or 0.0 for g in gpu_list),
            used_mib=sum(g.memory_used_mib or 0.0 for g in gpu_list),
            gpu_apps_mib=apps_mib,
        )
    if meminfo is None:
        return None
    mib = 1024.0 * 1024.0
    return MemoryView(
        source="meminfo",
        total_mib=meminfo.total_bytes / mib,
        used_mib=meminfo.used_bytes / mib,
        gpu_apps_mib=apps_mib,
    )
