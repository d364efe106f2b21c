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
