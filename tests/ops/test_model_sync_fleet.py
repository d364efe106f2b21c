"""`sync-model` on the simulated fleet, over real SSH: a removed or corrupted snapshot comes back
and passes the pins, a cut copy leaves nothing usable, a dry run writes nothing, a shared cache is
skipped, a hostile cache path is quoted."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cockpit.events import Notice, OpEvent, Planned, Progress, StepFinished
from cockpit.ops.model_sync import sync_model
from cockpit_sim.fleet import SimFleet
from cockpit_sim.tools.nodestate import GIB, SIM_BYTES_PER_GIB
from tests.fleet_fixtures import start_fleet
from tests.ops.conftest import PINNED, Cockpit, add_pinned_recipe, finished, run

REPO = "Qwen/Qwen3-0.6B"
CLUSTER = "4nodes-switch"
BLOB = "0" * 64


@pytest.fixture(scope="module")
def sync_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimFleet]:
    """Four nodes; dgx1's Qwen snapshot turned into the HF layout (a file as a blob symlink)."""
    fleet = start_fleet(tmp_path_factory.mktemp("model-sync"), 4)
    try:
        add_pinned_recipe(fleet)
        for node in fleet.names:
            snapshot = fleet.snapshot_dir(node, REPO)
            blobs = snapshot.parent.parent / "blobs"
            blobs.mkdir(exist_ok=True)
            (blobs / BLOB).write_bytes(b"weights\n" * 1000)
            (snapshot / "model.safetensors").symlink_to(f"../../blobs/{BLOB}")
        yield fleet
    finally:
        fleet.stop()


def model_folder(fleet: SimFleet, node: str) -> Path:
    return fleet.node_dir(node) / "hf-cache" / "hub" / "models--Qwen--Qwen3-0.6B"


@pytest.fixture
def fleet(sync_fleet: SimFleet) -> Iterator[SimFleet]:
    """The fleet, every node's model folder put back as dgx1's was, no cache markers left."""
    pristine = sync_fleet.root / "pristine"
    if not pristine.exists():
        shutil.copytree(model_folder(sync_fleet, "dgx1"), pristine, symlinks=True)
    yield sync_fleet
    for node in sync_fleet.names:
        folder = model_folder(sync_fleet, node)
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(pristine, folder, symlinks=True)
        (folder.parent.parent / ".cockpit-cache-id").unlink(missing_ok=True)


@pytest.fixture
async def cockpit(
    fleet: SimFleet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Cockpit]:
    monkeypatch.setenv("COCKPIT_STATE_DIR", str(tmp_path / "state"))
    cp = Cockpit(fleet, tmp_path / "state")
    yield cp
    await cp.pool.close()


def snapshot(fleet: SimFleet, node: str) -> Path:
    revision = next((model_folder(fleet, "dgx1") / "snapshots").iterdir()).name
    return model_folder(fleet, node) / "snapshots" / revision


def caches(fleet: SimFleet) -> dict[str, float]:
    """Every path in every node's model cache, with its modification time."""
    return {
        str(path): path.lstat().st_mtime
        for node in fleet.names
        for path in (fleet.node_dir(node) / "hf-cache").rglob("*")
    }


async def test_removed_and_corrupted_snapshots_come_back_and_pass_the_pins(
    cockpit: Cockpit,
) -> None:
    fleet = cockpit.fleet
    shutil.rmtree(snapshot(fleet, "dgx2"))
    shutil.rmtree(model_folder(fleet, "dgx4"))  # three nodes to copy to, as the issue asks
    shutil.rmtree(model_folder(fleet, "dgx3") / "blobs")
    fleet.corrupt_snapshot("dgx3", REPO)
    events = await run(sync_model(cockpit.ctx, cockpit.recipe(PINNED), CLUSTER))
    end = finished(events)
    assert end.ok and end.exit_code == 0, end.summary
    planned = events[0]
    assert isinstance(planned, Planned)
    assert "dgx2 (not in the model cache)" in planned.summary
    assert "dgx3 (config.json sha256" in planned.summary and "dgx4" in planned.summary
    bars = [e for e in events if isinstance(e, Progress) and e.node == "dgx2"]
    assert bars and bars[-1].done == bars[-1].total and bars[-1].unit == "B"
    verified = {
        e.node for e in events if isinstance(e, StepFinished) and e.step == "verify" and e.ok
    }
    assert verified == {"dgx2", "dgx3", "dgx4"}
    for node in ("dgx2", "dgx3", "dgx4"):
        copied = snapshot(fleet, node)
        assert (copied / "config.json").read_bytes() == (
            snapshot(fleet, "dgx1") / "config.json"
        ).read_bytes()
        assert os.readlink(copied / "model.safetensors") == f"../../blobs/{BLOB}"
        assert (copied / "model.safetensors").read_bytes() == b"weights\n" * 1000
        assert not list(model_folder(fleet, node).glob(".cockpit-sync.*"))
    again = finished(await run(sync_model(cockpit.ctx, cockpit.recipe(PINNED), CLUSTER)))
    assert again.ok and "nothing to copy" in again.summary


@contextmanager
def throttled(fleet: SimFleet, link: str, mib_s: float) -> Iterator[None]:
    """The simulated link `link` ("dgxA>dgxB") carrying `mib_s` MiB of real bytes a second."""
    path = fleet.root / "fleet.json"
    saved = path.read_text()
    config = json.loads(saved)
    mbps = mib_s * 2**20 * 8 / 1e6 * GIB / SIM_BYTES_PER_GIB
    config["links"] = {**(config.get("links") or {}), link: mbps}
    path.write_text(json.dumps(config))
    try:
        yield
    finally:
        path.write_text(saved)


def cut_midway(event: object) -> bool:
    return (
        isinstance(event, Progress)
        and event.node == "dgx2"
        and event.total is not None
        and 0 < event.done < event.total / 2
    )


@pytest.mark.parametrize("how", ["closed", "cancelled"])
async def test_a_cut_copy_leaves_no_usable_half_snapshot(cockpit: Cockpit, how: str) -> None:
    """Closed: the reader stops at a yield (the TUI leaving); cancelled: the task is cancelled
    while the relay runs (a signal in the CLI)."""
    fleet = cockpit.fleet
    big = model_folder(fleet, "dgx1") / "blobs" / ("1" * 64)
    with open(big, "wb") as handle:
        handle.write(os.urandom(1 << 20) * 96)
    (snapshot(fleet, "dgx1") / "model-big.safetensors").symlink_to(f"../../blobs/{big.name}")
    shutil.rmtree(snapshot(fleet, "dgx2"))
    with throttled(fleet, "dgx1>dgx2", 24):
        await cut(sync_model(cockpit.ctx, cockpit.recipe(PINNED), "2nodes-dac"), how, cut_midway)
    assert not snapshot(fleet, "dgx2").exists()
    end = finished(await run(sync_model(cockpit.ctx, cockpit.recipe(PINNED), "2nodes-dac")))
    assert end.ok, end.summary  # the locks were released; the next run copies it whole
    assert (snapshot(fleet, "dgx2") / "model-big.safetensors").stat().st_size == 96 << 20
    assert not list(model_folder(fleet, "dgx2").glob(".cockpit-sync.*"))


async def cut(
    gen: AsyncIterator[OpEvent], how: str, where: Callable[[OpEvent], bool]
) -> list[OpEvent]:
    """Follow an operation until an event `where` holds, then stop it `how`; the events seen."""
    seen: list[OpEvent] = []
    if how == "closed":
        async for event in gen:
            seen.append(event)
            if where(event):
                break
        else:
            pytest.fail("the copy ended before it could be cut")
        await gen.aclose()
    else:
        midway = asyncio.Event()

        async def follow() -> None:
            async for event in gen:
                seen.append(event)
                if where(event):
                    midway.set()

        task = asyncio.create_task(follow())
        await asyncio.wait_for(midway.wait(), 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    return seen


def sent_to(events: list[OpEvent], node: str) -> float:
    """The most bytes the progress events say reached `node`."""
    return max(e.done for e in events if isinstance(e, Progress) and e.node == node)


async def test_a_cut_copy_resumes_with_the_blobs_that_arrived_whole(cockpit: Cockpit) -> None:
    """Six 16 MiB blobs named by their sha256, as the HF cache stores them; the copy is cut a
    little past half way: the blobs that arrived whole stay on dgx2 (never the snapshot; when
    the simulated node kills the receive outright, the next run salvages them from its temp
    folder), the re-run leaves them out of the stream and sends fewer bytes."""
    fleet = cockpit.fleet
    blobs = model_folder(fleet, "dgx1") / "blobs"
    for i in range(6):
        data = os.urandom(1 << 20) * 16
        name = hashlib.sha256(data).hexdigest()
        (blobs / name).write_bytes(data)
        (snapshot(fleet, "dgx1") / f"model-{i}.safetensors").symlink_to(f"../../blobs/{name}")
    shutil.rmtree(snapshot(fleet, "dgx2"))

    def past_half(event: OpEvent) -> bool:
        return (
            isinstance(event, Progress) and event.node == "dgx2" and event.total is not None
            and event.total * 0.55 < event.done < event.total * 0.7
        )  # fmt: skip

    with throttled(fleet, "dgx1>dgx2", 12):  # dd reports once a second: up to 12% more arrived
        first = await cut(
            sync_model(cockpit.ctx, cockpit.recipe(PINNED), "2nodes-dac"), "closed", past_half
        )
    assert not snapshot(fleet, "dgx2").exists()
    events = await run(sync_model(cockpit.ctx, cockpit.recipe(PINNED), "2nodes-dac"))
    end = finished(events)
    assert end.ok, end.summary
    left_out = next(
        int(e.message.split()[0]) for e in events
        if isinstance(e, Notice) and "not sent again" in e.message
    )  # fmt: skip
    assert left_out >= 3  # past half way: at least three of the six had arrived whole
    total = next(e.total for e in first if isinstance(e, Progress) and e.total)
    assert sent_to(events, "dgx2") <= total - left_out * (16 << 20) + (1 << 16)  # tar's padding
    assert not list(model_folder(fleet, "dgx2").glob(".cockpit-sync.*"))
    for i in range(6):
        copied = snapshot(fleet, "dgx2") / f"model-{i}.safetensors"
        assert copied.read_bytes() == (snapshot(fleet, "dgx1") / copied.name).read_bytes()


async def test_dry_run_writes_nothing(cockpit: Cockpit) -> None:
    fleet = cockpit.fleet
    shutil.rmtree(snapshot(fleet, "dgx2"))
    before = caches(fleet)
    events = await run(sync_model(cockpit.ctx, cockpit.recipe(PINNED), CLUSTER, dry_run=True))
    end = finished(events)
    assert end.ok and "dry run" in end.summary
    assert isinstance(events[0], Planned) and "dgx1 → dgx2" in events[0].summary
    assert caches(fleet) == before


async def test_a_shared_cache_is_skipped(cockpit: Cockpit) -> None:
    """dgx2 mounts dgx1's cache (same absolute path, same content): never copied onto itself."""
    fleet = cockpit.fleet
    nodes = cockpit.inventory.nodes
    shared = str(model_folder(fleet, "dgx1").parent.parent)
    nodes["dgx2"] = nodes["dgx2"].model_copy(update={"model_cache": shared})
    shutil.rmtree(snapshot(fleet, "dgx3"))
    events = await run(sync_model(cockpit.ctx, cockpit.recipe(PINNED), CLUSTER))
    end = finished(events)
    assert end.ok, end.summary
    assert "shared cache, skipped: dgx2 (with dgx1)" in events[0].summary
    assert any(isinstance(e, Notice) and e.node == "dgx2" and "shared cache" in e.message
               for e in events)  # fmt: skip
    copied = {e.node for e in events if isinstance(e, StepFinished) and e.step == "copy"}
    assert copied == {"dgx3"}
    assert snapshot(fleet, "dgx3").is_dir()


async def test_a_hostile_cache_path_is_quoted(cockpit: Cockpit) -> None:
    fleet = cockpit.fleet
    nodes = cockpit.inventory.nodes
    hostile = fleet.root / "odd dir" / "it's $(touch PWNED) `touch PWNED2`;x" / "hf-cache"
    nodes["dgx2"] = nodes["dgx2"].model_copy(update={"model_cache": str(hostile)})
    end = finished(await run(sync_model(cockpit.ctx, cockpit.recipe(PINNED), "2nodes-dac")))
    assert end.ok, end.summary
    revision = snapshot(fleet, "dgx1").name
    landed = hostile / "hub" / "models--Qwen--Qwen3-0.6B" / "snapshots" / revision
    assert (landed / "config.json").is_file()
    assert not list(fleet.root.rglob("PWNED*")), "a path was run as code"


async def test_no_matching_snapshot_anywhere_is_refused_in_one_line(cockpit: Cockpit) -> None:
    fleet = cockpit.fleet
    fleet.corrupt_snapshot("dgx1", REPO)
    shutil.rmtree(snapshot(fleet, "dgx2"))
    end = finished(await run(sync_model(cockpit.ctx, cockpit.recipe(PINNED), "2nodes-dac")))
    assert end.exit_code == 2 and "\n" not in end.summary
    assert "no node of the cluster holds Qwen/Qwen3-0.6B@" in end.summary
    assert "huggingface-cli download" in end.summary and "cockpit sync-model" in end.summary
    refused = finished(await run(sync_model(cockpit.ctx, cockpit.recipe(PINNED), "nope")))
    assert refused.exit_code == 2 and "unknown cluster" in refused.summary


def test_the_cli_shows_the_plan_and_exits_as_the_other_operations(
    fleet: SimFleet, tmp_path: Path
) -> None:
    shutil.rmtree(snapshot(fleet, "dgx2"))
    env = {**os.environ, "COCKPIT_STATE_DIR": str(tmp_path / "state")}
    base = [sys.executable, "-m", "cockpit", "--inventory", str(fleet.inventory_dir), "sync-model"]

    def cockpit(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*base, *args], capture_output=True, text=True, env=env, timeout=120)

    dry = cockpit("-r", PINNED, "-c", "2nodes-dac", "--dry-run")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert (
        dry.stdout.startswith("sync-model: copy Qwen/Qwen3-0.6B@") and "done: dry run" in dry.stdout
    )
    assert not snapshot(fleet, "dgx2").exists()
    done = cockpit("-r", PINNED, "-c", "2nodes-dac", "--from", "dgx1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "dgx2 verify: ok pins match" in done.stdout
    fleet.corrupt_snapshot("dgx1", REPO)
    refused = cockpit("-r", PINNED, "-c", "2nodes-dac", "--from", "dgx1")
    assert refused.returncode == 2
    assert "refused: source dgx1's snapshot of Qwen/Qwen3-0.6B@" in refused.stdout
    unknown = cockpit("-r", "nope", "-c", "2nodes-dac")
    assert unknown.returncode == 2 and "unknown recipe 'nope'" in unknown.stdout + unknown.stderr
    launch = subprocess.run(
        [*base[:-1], "launch", "-r", PINNED, "-c", "2nodes-dac", "--sync-model", "--dry-run"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert launch.returncode == 0, launch.stdout + launch.stderr


async def test_a_launch_refused_for_a_missing_snapshot_names_sync_model(cockpit: Cockpit) -> None:
    from cockpit.ops.launch import launch

    shutil.rmtree(snapshot(cockpit.fleet, "dgx2"))
    events = await run(launch(cockpit.ctx, cockpit.recipe(PINNED), "2nodes-dac"))
    assert finished(events).exit_code == 2
    fix = f"fix: cockpit sync-model --recipe {PINNED} --cluster 2nodes-dac (copies it from dgx1)"
    assert any(
        isinstance(e, Notice) and "not in the model cache on dgx2" in e.message and fix in e.message
        for e in events
    )


async def test_launch_sync_model_copies_the_snapshot_in_preflight_then_serves(
    cockpit: Cockpit,
) -> None:
    from cockpit.ops.launch import launch
    from cockpit.ops.stop import stop

    fleet = cockpit.fleet
    shutil.rmtree(snapshot(fleet, "dgx2"))
    recipe = cockpit.recipe(PINNED)
    events = await run(launch(cockpit.ctx, recipe, "2nodes-dac", sync_model=True))
    end = finished(events)
    try:
        assert end.ok, end.summary
        assert "sync-model" in events[0].steps  # type: ignore[attr-defined]
        copied = [e for e in events if isinstance(e, StepFinished) and e.op == "sync-model"]
        assert [(e.step, e.node, e.ok) for e in copied] == [
            ("copy", "dgx2", True), ("verify", "dgx2", True),
        ]  # fmt: skip
        assert any(isinstance(e, Notice) and "dgx1 → dgx2" in e.message for e in events)
        assert (snapshot(fleet, "dgx2") / "config.json").is_file()
    finally:
        assert finished(await run(stop(cockpit.ctx, lane=PINNED))).ok


async def test_launch_sync_model_without_a_holder_is_refused_with_the_download(
    cockpit: Cockpit,
) -> None:
    from cockpit.ops.launch import launch

    fleet = cockpit.fleet
    fleet.corrupt_snapshot("dgx1", REPO)
    shutil.rmtree(snapshot(fleet, "dgx2"))
    events = await run(launch(cockpit.ctx, cockpit.recipe(PINNED), "2nodes-dac", sync_model=True))
    end = finished(events)
    assert end.exit_code == 2 and "huggingface-cli download" in end.summary + " ".join(
        e.message for e in events if isinstance(e, Notice)
    )
    assert not snapshot(fleet, "dgx2").exists()
