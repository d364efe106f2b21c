"""Suite-wide fixtures: the simulated fleets (see tests/fleet_fixtures.py), the paused collector."""

import gc
from collections.abc import Iterator

import pytest

from cockpit.startup import pause_collector

pytest_plugins = ["tests.fleet_fixtures"]


@pytest.fixture
def collector_paused() -> Iterator[None]:
    """The garbage collector as `cockpit`'s entry point leaves it (paused); restored after."""
    pause_collector()
    yield
    gc.enable()
    gc.unfreeze()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Boot the real vLLM lane in the background as soon as a selected test needs it."""
    if any(item.get_closest_marker("realvllm") for item in session.items):
        from tests import real_vllm

        real_vllm.start()


def pytest_sessionfinish(session: pytest.Session) -> None:
    from tests import real_vllm

    real_vllm.stop()
