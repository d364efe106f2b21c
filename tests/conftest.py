"""Suite-wide fixtures: the simulated fleets (see tests/fleet_fixtures.py), the paused collector."""

import contextlib
import gc
import os
from collections.abc import Iterator
from pathlib import Path

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


@pytest.fixture(scope="session", autouse=True)
def _suite_state_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The cockpit's state (boot history, the history store) of every test, the CLIs it runs
    included, in the suite's temporary folder, never the user's; a test that wants a folder of
    its own sets COCKPIT_STATE_DIR itself."""
    if "COCKPIT_STATE_DIR" in os.environ:
        yield
        return
    os.environ["COCKPIT_STATE_DIR"] = str(tmp_path_factory.mktemp("state"))
    yield
    os.environ.pop("COCKPIT_STATE_DIR", None)


AUTOGROUP = Path("/proc/self/autogroup")


def _autogroup_nice() -> str | None:
    with contextlib.suppress(OSError, IndexError):
        return AUTOGROUP.read_text().split()[-1]
    return None


@pytest.fixture(autouse=True)
def _suite_priority_kept() -> Iterator[None]:
    """No test may lower the suite's own share of the CPU. The status probe lowers its session's
    autogroup to nice 10; run by a stand-in sshd without a session of its own, it once lowered
    pytest's (and the CI shell's) group, and every later timing, the real lane's bench clients
    among them, ran behind the fleets' sessions (whole streams read in one burst)."""
    before = _autogroup_nice()
    yield
    after = _autogroup_nice()
    if before is not None and after != before:
        with contextlib.suppress(OSError):
            AUTOGROUP.write_text(before)  # the tests after this one run as before
        pytest.fail(f"this test changed the suite's autogroup nice from {before} to {after}")


def pytest_collection_finish(session: pytest.Session) -> None:
    """Boot the real vLLM lane in the background as soon as a selected test needs it. A worker of
    a parallel run (pytest-xdist) collects every test but runs only some: there the `real_lane`
    fixture boots it, in the one worker that runs those tests."""
    if hasattr(session.config, "workerinput"):
        return
    if any(item.get_closest_marker("realvllm") for item in session.items):
        from tests import real_vllm

        real_vllm.start()


def pytest_sessionfinish(session: pytest.Session) -> None:
    from tests import real_vllm

    real_vllm.stop()
