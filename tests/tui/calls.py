"""Counting the calls of a method in a Pilot test (each call still made)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest


@dataclass
class Calls:
    count: int = 0


def count_calls(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> Calls:
    """From now on each call of `owner.name` (a class's method, or one object's) is counted in
    the returned `Calls`, and still runs."""
    calls = Calls()
    original = getattr(owner, name)

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.count += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counting)
    return calls
