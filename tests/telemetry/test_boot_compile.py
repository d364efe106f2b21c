"""The boot tracker on real vLLM 0.32 CPU logs: the torch.compile warm-up is a phase of its own,
and the engine's "No available shared memory broadcast block" wait during it is no hang."""

from __future__ import annotations

from pathlib import Path

from cockpit.telemetry.boot import BootPhase, BootState, advance

REAL_LOG = Path(__file__).parents[1] / "fixtures" / "telemetry" / "vllm-0.32-cpu" / "serve.log"
HANG_LINE = (
    "(EngineCore pid=25926) INFO 12-02 04:02:16 [shm_broadcast.py:871] No available shared memory "
    "broadcast block found in 60 seconds. This typically happens when some processes are hanging "
    "or doing some time-consuming work (e.g. compilation, weight/kv cache loading)."
)


def _phases(lines: list[str]) -> tuple[list[BootPhase], BootState]:
    state, phases = BootState(), []
    for line in lines:
        state = advance(state, line)
        if not phases or phases[-1] is not state.phase:
            phases.append(state.phase)
    return phases, state


def test_the_compile_warm_up_is_named_between_weights_and_the_kv_pool() -> None:
    lines = REAL_LOG.read_text().splitlines()
    phases, state = _phases(lines)
    assert phases == [
        BootPhase.STARTING,
        BootPhase.LOADING_WEIGHTS,
        BootPhase.PROFILING,
        BootPhase.COMPILING,
        BootPhase.PROFILING,
        BootPhase.STARTING_SERVER,
        BootPhase.READY,
    ]
    assert state.kv_pool_tokens == 2_097_152
    # a slower host: the engine waits a minute on the compiling worker and says so
    start = next(i for i, line in enumerate(lines) if "Warming up model" in line)
    _, slow = _phases([*lines[: start + 1], HANG_LINE, *lines[start + 1 :]])
    assert slow.ready and slow.hang_hint is None
    # the same line outside the warm-up still hints at a hang
    _, hung = _phases([*lines[:start], HANG_LINE])
    assert hung.hang_hint is not None
