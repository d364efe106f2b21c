"""The ops tests' simulated fleet (one per module), a cockpit on it, and their helpers."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from cockpit.config import Inventory, load_inventory
from cockpit.events import Finished, OpEvent
from cockpit.ops.context import OpContext
from cockpit.ops.history import BootHistory
from cockpit.ops.stop import stop
from cockpit.ssh.inventory import pool_for
from cockpit_sim.fleet import SimFleet

QWEN = "qwen3-0.6b-2x"
PINNED = "qwen3-0.6b-2x-pinned"
SPEED = 200.0
BOOT_TIMEOUT = 60.0


def add_pinned_recipe(fleet: SimFleet) -> None:
    """A copy of the Qwen lane that pins its config.json sha256 (the seed's Flash lanes do)."""
    config = fleet.snapshot_dir("dgx1", "Qwen/Qwen3-0.6B") / "config.json"
    import hashlib

    pin = hashlib.sha256(config.read_bytes()).hexdigest()[:8]
    text = (fleet.inventory_dir / f"{QWEN}.toml").read_text()
    text = text.replace(f'name = "{QWEN}"', f'name = "{PINNED}"')
    text = text.replace("[model]\n", f'[model]\nconfig_sha256 = "{pin}"\n')
    (fleet.inventory_dir / f"{PINNED}.toml").write_text(text)


@pytest.fixture(scope="module")
def shared_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimFleet]:
    """One fleet for the module (starting one costs seconds); each test restores what it broke."""
    made = SimFleet(
        tmp_path_factory.mktemp("ops-fleet"),
        8,
        speed=SPEED,
        boot_speed=SPEED,
        owner_pid=os.getpid(),
    )
    try:
        made.start()
        add_pinned_recipe(made)
        yield made
    finally:
        made.stop()


STATE_FILES = ("images.json", "node.json")


@pytest.fixture
def fleet(shared_fleet: SimFleet) -> Iterator[SimFleet]:
    """The shared fleet, its nodes' images, faults and Qwen snapshot restored after the test."""
    saved = {}
    for node in shared_fleet.names:
        for name in STATE_FILES:
            saved[shared_fleet.node_dir(node) / name] = (
                shared_fleet.node_dir(node) / name
            ).read_bytes()
        config = shared_fleet.snapshot_dir(node, "Qwen/Qwen3-0.6B") / "config.json"
        saved[config] = config.read_bytes()
    yield shared_fleet
    for node in shared_fleet.names:
        shared_fleet.start_node(node)
    for path, content in saved.items():
        if path.is_dir():
            path.rmdir()
        path.write_bytes(content)


@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("COCKPIT_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


async def run(gen: AsyncIterator[OpEvent]) -> list[OpEvent]:
    return [event async for event in gen]


def finished(events: list[OpEvent]) -> Finished:
    last = events[-1]
    assert isinstance(last, Finished), last
    return last


class Cockpit:
    """One cockpit on the fleet: its inventory and an open pool."""

    def __init__(self, fleet: SimFleet, state: Path) -> None:
        self.fleet = fleet
        self.inventory: Inventory = load_inventory(fleet.inventory_dir)
        self.pool = pool_for(self.inventory)
        self.ctx = OpContext(self.inventory, self.pool, BootHistory(state / "boot.json"))

    def recipe(self, name: str):
        return self.inventory.recipe(name)


@pytest.fixture
async def cockpit(fleet: SimFleet, state_dir: Path) -> AsyncIterator[Cockpit]:
    cp = Cockpit(fleet, state_dir)
    yield cp
    await cp.pool.close()
    for node in fleet.names:
        fleet.start_node(node)
    cleaner = Cockpit(fleet, state_dir)  # a fresh pool: no backoff left from a stopped node
    cleanup = finished(await run(stop(cleaner.ctx, cluster="4nodes-switch")))
    await cleaner.pool.close()
    assert cleanup.ok, cleanup.summary


def containers(fleet: SimFleet, node: str) -> list[dict]:
    return json.loads((fleet.node_dir(node) / "containers.json").read_text())
