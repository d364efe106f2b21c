"""The bursty-stream knob turned on a lane of the simulated fleet, the way a fleet test or an
operator does it (`cockpit sim fault NODE bursty_stream`): the serving engine streams in bursts
from its next request on, and back to one chunk per token once the fault is cleared."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cockpit.config import load_inventory
from cockpit.ops.context import OpContext
from cockpit.ops.history import BootHistory
from cockpit.ops.launch import launch
from cockpit.ops.stop import stop
from cockpit.ssh.inventory import pool_for
from cockpit_sim.fleet import SimFleet

QWEN = "qwen3-0.6b-2x"


@pytest.fixture
async def lane(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple]:
    monkeypatch.setenv("COCKPIT_STATE_DIR", str(tmp_path / "state"))
    fleet = SimFleet(tmp_path / "fleet", 2, speed=20.0, boot_speed=400.0, owner_pid=os.getpid())
    fleet.start()
    inventory = load_inventory(fleet.inventory_dir)
    pool = pool_for(inventory)
    ctx = OpContext(inventory, pool, BootHistory(tmp_path / "boot.json"))
    try:
        events = [e async for e in launch(ctx, inventory.recipe(QWEN), "2nodes-dac",
                                          boot_timeout_s=90.0)]  # fmt: skip
        assert events[-1].ok, events[-1].summary
        yield fleet, inventory.nodes["dgx1"].host, inventory.serve_port
        [e async for e in stop(ctx, lane=QWEN)]
    finally:
        await pool.close()
        fleet.stop()


def _reads(host: str, port: int) -> list[bytes]:
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 32,
                       "stream": True, "return_token_ids": True}).encode()  # fmt: skip
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type: "
            f"application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n")  # fmt: skip
    reads = []
    with socket.create_connection((host, port), timeout=30) as sock:
        sock.sendall(head.encode() + body)
        while data := sock.recv(1 << 16):
            reads.append(data)
    return reads


def _chunks(reads: list[bytes]) -> list[dict]:
    raw = b"".join(reads).decode()
    return [json.loads(line[6:]) for line in raw.splitlines() if line.startswith("data: {")]


async def test_sim_fault_bursty_stream_on_a_serving_lane(lane: tuple) -> None:
    fleet, host, port = lane
    plain = _chunks(_reads(host, port))
    assert len(plain) == 1 + 32  # the role chunk, then one chunk per token
    fleet.set_fault("dgx1", "bursty_stream")
    reads = _reads(host, port)
    content = [c["choices"][0] for c in _chunks(reads)[1:]]
    assert sum(len(c["token_ids"]) for c in content) == 32 and len(content) < 32
    assert max(r.count(b"data: {") for r in reads) >= 3
    assert any(c["delta"]["content"] == "" for c in content)
    fleet.set_fault("dgx1", "bursty_stream", on=False)
    assert len(_chunks(_reads(host, port))) == len(plain)
