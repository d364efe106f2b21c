"""docker on simulated nodes, driven over SSH as the cockpit drives it."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Iterator

import pytest

from cockpit_sim.fleet import SimFleet
from cockpit_sim.tools.nodestate import GIB, derive_hex, new_image
from tests.fleet_fixtures import connect

PLAIN = "sim/plain:1"
Place = Callable[[SimFleet, str], None]


PLAIN_ID = "sha256:" + derive_hex("", "plain")


@pytest.fixture
def plain_image() -> Iterator[Callable[[SimFleet, str], None]]:
    """Put a non-engine image on a node for one test; the shared fleet gets it removed after."""
    placed: list[tuple[SimFleet, str]] = []

    def place(fleet: SimFleet, node: str) -> None:
        fleet.add_image(
            node,
            new_image(repo="sim/plain", image_id=PLAIN_ID, size_bytes=GIB // 4, tags=[PLAIN]),
        )
        placed.append((fleet, node))

    yield place
    for fleet, node in placed:
        fleet.remove_image(node, PLAIN_ID)


async def test_run_ps_logs_stop_rm(sim_fleet: SimFleet, plain_image: Place) -> None:
    plain_image(sim_fleet, "dgx3")
    script = "echo hello; echo oops >&2; sleep 0.3; echo second; exec sleep 60"
    async with connect(sim_fleet, "dgx3") as conn:
        run = await conn.run(
            f"docker run -d --name lane-t1 --network host --ipc host --gpus all "
            f"--label cockpit.lane=t1 -e A=1 --shm-size 16g {PLAIN} bash -c {shlex.quote(script)}"
        )
        assert re.fullmatch(r"[0-9a-f]{64}\n", run.stdout)
        ps = await conn.run("docker ps --format '{{json .}}' --filter label=cockpit.lane=t1")
        rows = [json.loads(line) for line in ps.stdout.splitlines()]
        assert [(r["Names"], r["State"], r["ID"]) for r in rows] == [
            ("lane-t1", "running", run.stdout[:12])
        ]
        assert rows[0]["Status"].startswith("Up ") and "cockpit.lane=t1" in rows[0]["Labels"]
        none = await conn.run("docker ps -q --filter label=cockpit.lane=other")
        assert none.stdout == ""
        logs = await conn.run(
            "for i in 1 2 3 4 5 6 7 8 9; do docker logs lane-t1 2>&1 | grep -q second"
            " && break; sleep 0.2; done; docker logs lane-t1"
        )
        assert logs.stdout == "hello\nsecond\n" and logs.stderr == "oops\n"
        tail = await conn.run("docker logs --tail 1 --timestamps lane-t1 2>/dev/null")
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z second\n", tail.stdout)
        future = await conn.run("docker logs --since 2099-01-01T00:00:00Z lane-t1")
        assert future.stdout == ""
        stop = await conn.run("docker stop -t 1 lane-t1")
        assert stop.stdout == "lane-t1\n"
        exited = await conn.run("docker ps -a --filter name=lane-t1 --format '{{.Status}}'")
        assert re.fullmatch(r"Exited \(143\) .* ago\n", exited.stdout)
        assert (await conn.run("docker ps -q --filter name=lane-t1")).stdout == ""
        rm = await conn.run("docker rm lane-t1")
        assert rm.stdout == "lane-t1\n"
        gone = await conn.run("docker logs lane-t1", check=False)
        assert (gone.exit_status, gone.stderr) == (
            1,
            "Error: No such container: lane-t1\n",  # Docker 20.10: the CLI's words
        )


async def test_run_errors_match_docker(sim_fleet: SimFleet, plain_image: Place) -> None:
    plain_image(sim_fleet, "dgx4")
    async with connect(sim_fleet, "dgx4") as conn:
        await conn.run(f"docker run -d --name dup {PLAIN} sleep 30")
        clash = await conn.run(f"docker run -d --name dup {PLAIN} sleep 30", check=False)
        assert clash.exit_status == 125
        assert 'Conflict. The container name "/dup" is already in use' in clash.stderr
        busy = await conn.run("docker rm dup", check=False)
        assert busy.exit_status == 1 and "You cannot remove a running container" in busy.stderr
        assert (await conn.run("docker rm -f dup")).stdout == "dup\n"
        missing = await conn.run("docker image inspect nope:1", check=False)
        assert (missing.exit_status, missing.stdout) == (1, "[]\n")
        assert missing.stderr == "Error: No such image: nope:1\n"


async def test_foreground_run_returns_exit_code(sim_fleet: SimFleet, plain_image: Place) -> None:
    plain_image(sim_fleet, "dgx2")
    async with connect(sim_fleet, "dgx2") as conn:
        result = await conn.run(f"docker run --rm {PLAIN} bash -c 'echo out; exit 3'", check=False)
        assert (result.exit_status, result.stdout) == (3, "out\n")


async def test_seeded_images_follow_the_seed(sim_fleet: SimFleet) -> None:
    """SparkRing only on dgx5-8 with its digest (seed §2); the other recipe images everywhere."""
    fmt = "'{{.Repository}}@{{.Digest}}'"
    listings = {}
    for node in ("dgx1", "dgx5", "dgx8"):
        async with connect(sim_fleet, node) as conn:
            listings[node] = (await conn.run(f"docker images --digests --format {fmt}")).stdout
    sparkring = "ghcr.io/fujitsupolycom/sparkring@sha256:c977a2d2"
    assert sparkring not in listings["dgx1"]
    assert sparkring in listings["dgx5"] and sparkring in listings["dgx8"]
    others = {line for line in listings["dgx1"].splitlines()}
    assert others and others <= set(listings["dgx5"].splitlines())
    by_prefix = "'{{.Id}}' " + sparkring  # the recipes' digest prefix resolves (8+ hex digits)
    async with connect(sim_fleet, "dgx5") as conn:
        assert (await conn.run(f"docker image inspect -f {by_prefix}")).stdout.startswith("sha256:")
    async with connect(sim_fleet, "dgx1") as conn:
        assert (
            await conn.run(f"docker image inspect -f {by_prefix}", check=False)
        ).exit_status == 1


async def test_save_load_loses_digest_and_pull_reattaches(small_fleet: SimFleet) -> None:
    """Seed §1: a save by digest carries no tag and the load drops RepoDigests; `docker run
    <ref>` then needs the registry (down: exit 125, as on a real daemon); a pull re-attaches."""
    holder = next(i for i in small_fleet.images("dgx2") if "sparkring" in i["SimRepo"])
    ref = holder["RepoDigests"][0]
    assert not any(i["Id"] == holder["Id"] for i in small_fleet.images("dgx1"))
    async with connect(small_fleet, "dgx2") as conn:
        moved = await conn.run(f"docker save {shlex.quote(ref)} | ssh dgx1 docker load")
        assert moved.stdout == f"Loaded image ID: {holder['Id']}\n"
    async with connect(small_fleet, "dgx1") as conn:
        inspect = json.loads(
            (
                await conn.run(
                    f"docker image inspect {shlex.quote(ref)} {holder['Id']}", check=False
                )
            ).stdout
        )
        assert [(i["Id"], i["RepoTags"], i["RepoDigests"]) for i in inspect] == [
            (holder["Id"], [], [])
        ]
        small_fleet.set_registry(up=False)
        run = await conn.run(f"docker run -d --name lane {shlex.quote(ref)} serve", check=False)
        assert run.exit_status == 125
        assert run.stderr == (
            f"Unable to find image '{ref}' locally\n"
            'docker: Error response from daemon: Get "https://ghcr.io/v2/": dial tcp: '
            "lookup ghcr.io: no such host.\nSee 'docker run --help'.\n"
        )
        down = await conn.run(f"docker pull {shlex.quote(ref)}", check=False)
        assert down.exit_status == 1 and "lookup ghcr.io: no such host" in down.stderr
        small_fleet.set_registry(up=True)
        pull = await conn.run(f"docker pull {shlex.quote(ref)}")
        assert pull.stdout.endswith(f"Status: Downloaded newer image for {ref}\n{ref}\n")
        digests = await conn.run(f"docker image inspect --format '{{{{json .RepoDigests}}}}' {ref}")
        assert json.loads(digests.stdout) == [ref]
        unknown = ref[:-4] + "0000"
        missing = await conn.run(f"docker pull {unknown}", check=False)
        assert (missing.exit_status, missing.stderr) == (
            1,
            f"Error response from daemon: manifest for {unknown} not found: manifest unknown: "
            "manifest unknown\n",
        )


async def test_save_stream_size_is_the_scaled_record_size(small_fleet: SimFleet) -> None:
    image = small_fleet.images("dgx1")[0]
    async with connect(small_fleet, "dgx1") as conn:
        size = await conn.run(f"docker save {image['Id'][7:19]} | wc -c")
    assert int(size.stdout) == image["SimBytes"]


async def test_logs_follow_ends_with_the_container(sim_fleet: SimFleet, plain_image: Place) -> None:
    plain_image(sim_fleet, "dgx6")
    script = "for i in 1 2 3; do echo line$i; sleep 0.2; done; exit 4"
    async with connect(sim_fleet, "dgx6") as conn:
        await conn.run(f"docker run -d --name follow {PLAIN} bash -c {shlex.quote(script)}")
        followed = await conn.run("docker logs -f follow")
        inspect = json.loads((await conn.run("docker inspect follow")).stdout)
        await conn.run("docker rm follow")
    assert followed.stdout == "line1\nline2\nline3\n"
    state = inspect[0]["State"]
    assert (inspect[0]["Name"], state["Status"], state["Running"], state["ExitCode"]) == (
        "/follow",
        "exited",
        False,
        4,
    )


async def test_tag_and_rmi(sim_fleet: SimFleet, plain_image: Place) -> None:
    plain_image(sim_fleet, "dgx7")
    async with connect(sim_fleet, "dgx7") as conn:
        await conn.run(f"docker tag {PLAIN} sim/plain:extra")
        tags = await conn.run("docker images sim/plain --format '{{.Repository}}:{{.Tag}}'")
        untag = await conn.run("docker rmi sim/plain:extra")
        delete = await conn.run(f"docker rmi {PLAIN}")
        gone = await conn.run(f"docker image inspect {PLAIN}", check=False)
    assert sorted(tags.stdout.split()) == ["sim/plain:1", "sim/plain:extra"]
    assert untag.stdout == "Untagged: sim/plain:extra\n"
    assert delete.stdout.startswith(f"Untagged: {PLAIN}\nDeleted: {PLAIN_ID}\nDeleted: sha256:")
    assert gone.exit_status == 1
