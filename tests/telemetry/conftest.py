"""Fixture files for the telemetry parsers: raw bytes decoded as UTF-8, line ends untouched."""

from collections.abc import Callable
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "telemetry"


@pytest.fixture
def fixture_text() -> Callable[[str], str]:
    def read(name: str) -> str:
        return (FIXTURES / name).read_bytes().decode("utf-8")

    return read
