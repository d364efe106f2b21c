"""Issue 13, done when: the lane operations over SSH on a 4-node fleet of real Docker daemons.

One module-scoped fleet (dgx1-4, a dockerd each, a loopback registry). The SparkRing image starts
on dgx3 and dgx4 only (the seed state); the test takes it off dgx4 too, so one node syncs it to
three. What the test reads to judge comes from the daemons themselves (`docker events`, `image
inspect`, `ps`, `inspect`), never from the cockpit's own account.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from cockpit.config import load_inventory
from cockpit.events import Finished, OpEvent, Progress, StepFinished
from cockpit.ops.context import OpContext
from cockpit.ops.history import BootHistory
from cockpit.ops.launch import launch
from cockpit.ops.stop import stop
from cockpit.ops.switch import switch
from cockpit.ops.sync import sync_image
from cockpit.ssh.inventory import pool_for
from cockpit_sim.fleet import SimFleet
from cockpit_sim.fleet.docker_fleet import DockerFleet
from tests.fleet_fixtures import RealDockerTrace, start_fleet

pytestmark = [pytest.mark.realdocker, pytest.mark.slow]

FLASH4 = "mimo26-flash-mopd-4x-sparkring"
FLASH2 = "mimo26-flash-mopd-2x-sparkring"
PROD = "4nodes-switch"
DAC = "2nodes-dac"
SPEED = 50.0
BOOT_TIMEOUT = 120.0


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimFleet]:
    made = start_fleet(tmp_path_factory.mktemp("real-fleet"), 4, docker="real", speed=SPEED)
    trace = RealDockerTrace.of(made)
    try:
        yield made
    finally:
        made.stop()
    assert trace.leftovers() == []


def daemons(fleet: SimFleet) -> DockerFleet:
    docker = fleet.real_docker
    assert docker is not None
    return docker


def docker(fleet: SimFleet, node: str, *args: str) -> str:
    """Debian's client straight against the node's daemon: the test's own view."""
    return daemons(fleet).docker(node, *args)


def image_events(fleet: SimFleet, node: str, since: float) -> list[str]:
    """The node daemon's image actions since `since` (save, load, pull, ...), in order."""
    out = docker(
        fleet, node, "events", "--since", f"{since:.3f}", "--until", f"{time.time():.3f}",
        "--filter", "type=image", "--format", "{{.Action}}",
    )  # fmt: skip
    return out.split()


def inspect_image(fleet: SimFleet, node: str, ref: str) -> dict[str, Any] | None:
    try:
        return json.loads(docker(fleet, node, "image", "inspect", ref))[0]
    except Exception:
        return None


async def run(gen: AsyncIterator[OpEvent]) -> list[OpEvent]:
    return [event async for event in gen]


def outcome(events: list[OpEvent]) -> Finished:
    last = events[-1]
    assert isinstance(last, Finished), last
    return last


class Observed:
    """The cockpit's pool, with the calls that matter to the issue recorded on the way.

    Before each `docker pull` (the re-attach) it asks the peer's daemon what RepoDigests the
    loaded image has: the test sees the digest dropped by the load, then re-attached."""

    def __init__(self, fleet: SimFleet, ctx: OpContext) -> None:
        self.fleet = fleet
        self.pool = ctx.pool
        self.before_pull: dict[str, list[str]] = {}
        self.streams: list[tuple[str, str]] = []
        self.forwards: list[tuple[str, str, int]] = []
        run_, stream_, forward_ = self.pool.run, self.pool.stream, self.pool.forward

        async def run_spy(node: str, command: Any, timeout: float = 30.0, input: Any = None):
            if isinstance(command, list) and command[:2] == ["docker", "pull"]:
                ref = command[2]
                image_id = ctx.inventory.recipe(FLASH4).image.image_id
                info = await asyncio.to_thread(inspect_image, fleet, node, image_id)
                self.before_pull[node] = info["RepoDigests"] if info else ["(absent)"]
                assert ref.split("@")[1] == ctx.inventory.recipe(FLASH4).image.digest
            return await run_(node, command, timeout, input)

        def stream_spy(node: str, command: Any) -> Any:
            self.streams.append((node, command if isinstance(command, str) else " ".join(command)))
            return stream_(node, command)

        async def forward_spy(node: str, host: str, port: int) -> tuple[str, int]:
            self.forwards.append((node, host, port))
            return await forward_(node, host, port)

        self.pool.run = run_spy  # type: ignore[method-assign]
        self.pool.stream = stream_spy  # type: ignore[method-assign]
        self.pool.forward = forward_spy  # type: ignore[method-assign]


def lane_containers(fleet: SimFleet, node: str) -> list[dict[str, Any]]:
    rows = docker(fleet, node, "ps", "-a", "--format", "{{json .}}").splitlines()
    return [json.loads(r) for r in rows]


async def test_sync_launch_switch_stop_on_real_docker(fleet: SimFleet, tmp_path: Path) -> None:
    inventory = load_inventory(fleet.inventory_dir)
    flash4 = inventory.recipe(FLASH4)
    ref, image_id = flash4.image.ref, flash4.image.image_id
    assert ref.startswith("127.0.0.1:") and "@sha256:" in ref and len(flash4.image.digest) == 71
    # the seed state: the SparkRing image on the upper half only; take it off dgx4 as well
    assert [n for n in fleet.names if inspect_image(fleet, n, ref)] == ["dgx3", "dgx4"]
    docker(fleet, "dgx4", "rmi", ref)
    assert inspect_image(fleet, "dgx4", image_id) is None

    ctx = OpContext(inventory, pool_for(inventory), BootHistory(tmp_path / "boot.json"))
    seen = Observed(fleet, ctx)
    try:
        # -- sync: one docker save on dgx3, loads on three peers, digests back by pull
        since = time.time()
        events = await run(sync_image(ctx, flash4, PROD))
        assert outcome(events).exit_code == 0, outcome(events).summary
        assert image_events(fleet, "dgx3", since) == ["save"]
        for peer in ("dgx1", "dgx2", "dgx4"):
            assert image_events(fleet, peer, since) == ["load", "pull"], peer
            assert seen.before_pull[peer] == [], f"{peer}: the load kept a digest"
        for node in fleet.names:
            info = inspect_image(fleet, node, ref)
            assert info is not None, node
            assert info["Id"] == image_id and info["RepoDigests"] == [ref], node

        # -- launch: real docker run workers first, boot read through real docker logs -f
        events = await run(launch(ctx, flash4, PROD, boot_timeout_s=BOOT_TIMEOUT))
        assert outcome(events).exit_code == 0, outcome(events).summary
        ranks = {
            n: [c for c in lane_containers(fleet, n) if FLASH4 in c["Names"]] for n in fleet.names
        }
        assert all(len(r) == 1 and r[0]["State"] == "running" for r in ranks.values()), ranks
        created = {n: r[0]["CreatedAt"] for n, r in ranks.items()}
        assert max(created, key=created.get) == "dgx1", f"the head starts last: {created}"
        head = json.loads(docker(fleet, "dgx1", "inspect", f"cockpit-{FLASH4}-r0"))[0]
        assert head["Config"]["Image"] == ref and head["Image"] == image_id
        assert head["HostConfig"]["DeviceRequests"][0]["Capabilities"] == [["gpu"]]
        assert sorted(m["Destination"] for m in head["Mounts"]) == [
            "/root/.cache/huggingface",
            "/root/.cache/vllm",
        ], "the GPU hook's mounts must not show"  # fmt: skip (the daemon's order varies)
        logs = {node for node, command in seen.streams if command.startswith("docker logs -f")}
        assert logs == set(fleet.names)
        booted = {e.node for e in events if isinstance(e, Progress) and e.step == "boot"}
        assert booted == set(fleet.names)
        assert any(
            isinstance(e, Progress) and e.node == "dgx1" and "loading weights" in (e.message or "")
            for e in events
        )
        # -- ready through the SSH forward from the head
        head_addr = inventory.nodes["dgx1"].service_addr
        assert seen.forwards and set(seen.forwards) == {("dgx1", head_addr, 30000)}
        ready = [e for e in events if isinstance(e, StepFinished) and e.step == "ready"]
        assert ready and "http://127.0.0.1:" in (ready[0].detail or ""), ready

        # -- switch to the 2x lane on dgx1+dgx2 (production's 4x lane stops first)
        events = await run(switch(ctx, inventory.recipe(FLASH2), DAC, boot_timeout_s=BOOT_TIMEOUT))
        assert outcome(events).exit_code == 0, outcome(events).summary
        names = {n: sorted(c["Names"] for c in lane_containers(fleet, n)) for n in fleet.names}
        assert names == {
            "dgx1": [f"cockpit-{FLASH2}-r0"], "dgx2": [f"cockpit-{FLASH2}-r1"],
            "dgx3": [], "dgx4": [],
        }  # fmt: skip

        # -- stop: the containers really removed, on every daemon
        events = await run(stop(ctx, lane=FLASH2))
        assert outcome(events).exit_code == 0, outcome(events).summary
        for node in fleet.names:
            assert docker(fleet, node, "ps", "-aq").split() == [], node
    finally:
        await ctx.pool.close()


async def test_nodes_run_debians_client_and_gpu_containers_learn_their_node(
    fleet: SimFleet,
) -> None:
    """The image is the same everywhere; the node comes from the `--gpus all` hook only."""
    inventory = load_inventory(fleet.inventory_dir)
    ref = inventory.recipe("qwen3-0.6b-2x").image.ref
    assert len({inspect_image(fleet, n, ref)["Id"] for n in fleet.names}) == 1  # type: ignore[index]
    pool = pool_for(inventory)
    try:
        for node in ("dgx1", "dgx2"):
            version = await pool.run(
                node, "docker version --format '{{.Client.Version}} {{.Server.Version}}'"
            )
            client, server = version.stdout.split()
            assert client == server, "the node's docker must be Debian's client, not another"
            shown = await pool.run(
                node,
                ["docker", "run", "--rm", "--gpus", "all", "--network", "host",
                 "--entrypoint", "/bin/cat", ref, "/run/cockpit-sim/node.env"],
            )  # fmt: skip
            assert shown.ok, shown.stderr
            assert f"COCKPIT_SIM_NODE={node}\n" in shown.stdout
        bare = await pool.run("dgx1", ["docker", "run", "--rm", "--network", "host", ref, "/m"])
        assert bare.exit_status == 1 and "no GPU in this container" in bare.stderr
    finally:
        await pool.close()
