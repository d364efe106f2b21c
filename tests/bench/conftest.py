"""Simulated 4x Flash engines for the bench tests that need the real scheduler, and the real
vLLM lane (tests/real_vllm.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests import real_vllm
from tests.bench.sim_engine import running_engine
from tests.real_vllm import RealLane

FLASH_SPEED = 10.0  # fast enough for the suite, slow enough that client overheads stay small
COMPARE_SPEED = 2.0
"""For comparing two clients within 5 %: at ×10 a 2 ms stall of either client is 20 ms of engine
time, 4 % of a pp2048 window; at ×2 the same stall is under 1 %."""


@pytest.fixture(scope="session")
def flash_lane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_engine(tmp_path_factory.mktemp("flash4"), speed=FLASH_SPEED) as url:
        yield url


@pytest.fixture(scope="module")
def compare_lane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_engine(tmp_path_factory.mktemp("flash4-x2"), speed=COMPARE_SPEED) as url:
        yield url


@pytest.fixture(scope="session")
def real_lane() -> RealLane:
    """The real vLLM lane, launched by the cockpit (booting since collection ended)."""
    return real_vllm.lane()
