"""The GPU load a rank publishes for the fleet's fake nvidia-smi (`$NODE_DIR/gpu_load.json`).

`sample()` is pure: GB10 figures by engine phase (idle ≈ 11 W at 0 %, prefill ≈ 100 W+ at 99 %,
SM clock up to 2.4 GHz); `publish()` writes atomically (temp file + rename) so a reader never sees
half a file. Workers publish the head's phase and utilisation with their own memory figures.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

PHASES = ("loading", "autotune", "capture", "idle", "prefill", "decode")
_POWER = {"loading": 24.0, "autotune": 78.0, "capture": 58.0, "idle": 13.6, "prefill": 104.0,
          "decode": 71.0}  # fmt: skip
_CLOCK = {"loading": 1_530, "autotune": 2_405, "capture": 2_280, "idle": 208, "prefill": 2_405,
          "decode": 2_405}  # fmt: skip
_UTIL = {"loading": 6.0, "autotune": 93.0, "capture": 61.0, "idle": 0.0}


@dataclass(frozen=True)
class GpuLoad:
    ts: float
    util: int
    power_w: float
    sm_clock_mhz: int
    mem_used_mib: int
    pid: int
    phase: str


def sample(phase: str, util: float | None, mem_gib: float, pid: int, at: float) -> GpuLoad:
    """Figures for `phase`; serving phases take the engine's measured utilisation (0..1)."""
    busy = _UTIL.get(phase, 0.0) if util is None else util * 100
    if phase == "idle":
        power = _POWER["idle"] if mem_gib > 1 else 11.2
    else:
        power = _POWER["idle"] + (_POWER[phase] - _POWER["idle"]) * max(busy, 5.0) / 100
    return GpuLoad(
        ts=round(at, 3),
        util=round(busy),
        power_w=round(power, 2),
        sm_clock_mhz=_CLOCK[phase],
        mem_used_mib=int(mem_gib * 1024),
        pid=pid,
        phase=phase,
    )


def publish(path: Path, load: GpuLoad) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(asdict(load)), encoding="utf-8")
    os.replace(tmp, path)


def withdraw(path: Path) -> None:
    path.unlink(missing_ok=True)
