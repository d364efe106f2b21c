"""The history tests' store: a fresh file in a tmp dir per test, closed after it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cockpit.history.store import HistoryStore


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "state" / "history.db"


@pytest.fixture
def store(db: Path) -> Iterator[HistoryStore]:
    opened = HistoryStore.open(db)
    yield opened
    opened.close()
