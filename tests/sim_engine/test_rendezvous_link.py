"""The head's side of the simulated rank rendezvous (`cockpit_sim.engine.rendezvous.HeadLink`):
a worker that goes away, however its connection ends, takes the lane down as vLLM's head does."""

from __future__ import annotations

import asyncio
import json
import socket
import struct

import pytest

from cockpit_sim.engine.rendezvous import HeadLink
from cockpit_sim.fleet.realdocker import free_port


async def _joined_worker(link: HeadLink) -> socket.socket:
    worker = socket.create_connection((link.host, link.port))
    worker.sendall((json.dumps({"rank": 1}) + "\n").encode())
    assert await link.wait_joined(5)
    return worker


@pytest.mark.parametrize("ending", ["closed", "reset with the head's messages unread"])
async def test_a_worker_gone_sets_lost_with_its_rank(ending: str) -> None:
    link = HeadLink("127.0.0.1", free_port("127.0.0.1"), expected=1)
    await link.start()
    try:
        worker = await _joined_worker(link)
        if ending != "closed":
            link.broadcast({"type": "load", "phase": "serving", "util": 0.5})
            await asyncio.sleep(0.1)  # in the worker's receive queue, never read
            worker.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        worker.close()
        await asyncio.wait_for(link.lost.wait(), 5)
        assert link.lost_rank == 1
    finally:
        await link.close()
