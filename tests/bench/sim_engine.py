"""Start the simulated vLLM engine as a subprocess for bench tests (the real HTTP face).

The node directory carries the per-model compile-cache marker so the boot skips the b12x
autotune (a second boot, as the engine models it), and optionally a fault.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from tests.sim_engine import engine_proc

FLASH = "/models/models--XiaomiMiMo--MiMo-V2.6-Flash-MOPD/snapshots/0123456789ab"
SMALL = "/models/models--Qwen--Qwen3-0.6B/snapshots/0123456789ab"
SPEEDS: dict[str, float] = {}
"""Each running engine's time scale by base URL: the launcher knows it, the bench is told it
(`BenchRequest.time_scale`, `--time-scale`), as the simulator's launchers tell the bench."""
BOOT_SPEED = 200.0
"""The boot phases run at least this fast (serving keeps `speed`): tests wait seconds, not minutes."""


@contextlib.contextmanager
def running_engine(
    tmp: Path,
    model: str = FLASH,
    tp: int = 4,
    speed: float = 10.0,
    faults: tuple[str, ...] = (),
    boot_timeout: float = 90.0,
    env: dict[str, str] | None = None,
) -> Iterator[str]:
    """A serving engine's base URL (`env`: more of its environment, e.g. VLLM_API_KEY); the
    process is stopped on exit."""
    node = tmp / "node"
    (node / "cache").mkdir(parents=True, exist_ok=True)
    name = Path(model).parent.parent.name
    (node / "cache" / f"b12x-{name}.json").write_text("{}")
    extra = [
        "--tensor-parallel-size", str(tp),
        "--max-num-seqs", "16", "--max-num-batched-tokens", "8192",
        "--enable-prefix-caching", "--max-model-len", "524288",
    ]  # fmt: skip
    if model == FLASH:
        extra += ["--speculative-config", json.dumps({"num_speculative_tokens": 5})]
    engine = engine_proc.start(
        node,
        model,
        *extra,
        speed=speed,
        boot_speed=max(BOOT_SPEED, speed),
        node={"faults": {f: True for f in faults}},
        env=env,
    )
    try:
        deadline = time.monotonic() + boot_timeout
        while True:
            if engine.proc.poll() is not None:
                raise RuntimeError(
                    f"engine exited {engine.proc.returncode}: {engine.text()[-2000:]}"
                )
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{engine.url}/health", timeout=1.0).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("engine did not become healthy")
            time.sleep(0.2)
        SPEEDS[engine.url] = speed
        yield engine.url
    finally:
        SPEEDS.pop(engine.url, None)
        engine.stop()
