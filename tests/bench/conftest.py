"""One simulated 4x Flash engine for the bench tests that need the real scheduler."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.bench.sim_engine import running_engine

FLASH_SPEED = 10.0  # fast enough for the suite, slow enough that client overheads stay small


@pytest.fixture(scope="session")
def flash_lane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_engine(tmp_path_factory.mktemp("flash4"), speed=FLASH_SPEED) as url:
        yield url
