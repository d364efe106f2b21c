"""Rules on the product's code that a review would otherwise have to remember."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

PRODUCT = Path(__file__).resolve().parent.parent / "cockpit"


def _product_sources() -> list[Path]:
    return sorted(PRODUCT.rglob("*.py"))  # the simulator is not in it: sim/ is its own


async def _cancel_lost_by(wait: str) -> bool:
    """Cancel a consumer at the moment its queue hands it an item; True when the cancel is lost."""
    queue: asyncio.Queue[int] = asyncio.Queue()

    async def consumer() -> None:
        while True:
            if wait == "wait_for":
                await asyncio.wait_for(queue.get(), 1.0)
            else:
                async with asyncio.timeout(1.0):
                    await queue.get()

    task = asyncio.create_task(consumer())
    await asyncio.sleep(0)  # the consumer waits on the empty queue
    queue.put_nowait(1)  # its get() completes and wakes it up...
    await asyncio.sleep(0)
    task.cancel()  # ...and the cancel lands before it runs again
    await asyncio.sleep(0.05)
    lost = not task.done()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return lost


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.12 rewrote wait_for on timeout()")
async def test_wait_for_loses_a_cancel_on_this_python_and_timeout_does_not() -> None:
    assert await _cancel_lost_by("wait_for")
    assert not await _cancel_lost_by("timeout")


def test_the_product_never_uses_wait_for() -> None:
    """A SIGHUP mid-launch was lost this way in CI: the launch waited on for its hung head."""
    users = [
        str(p.relative_to(PRODUCT)) for p in _product_sources() if "wait_for(" in p.read_text()
    ]
    assert users == []
