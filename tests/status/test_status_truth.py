"""Issue 19 on the simulated fleet: `cockpit status` checks image ids against the recipes' pins,
and the sync it names as the fix repairs a node whose digest points to a wrong image."""

from __future__ import annotations

import json
from collections.abc import Callable

from cockpit.sim.fleet import SimFleet
from tests.cli_runner import run_cockpit

SPARKRING = "ghcr.io/fujitsupolycom/sparkring"


def _status(fleet: SimFleet) -> tuple[int, dict]:
    done = run_cockpit("--inventory", fleet.inventory_dir, "status", "--format", "json")
    return done.returncode, json.loads(done.stdout)


def test_a_corrupted_image_is_shown_with_its_fix_and_the_fix_repairs_it(
    fleet_factory: Callable[..., SimFleet],
) -> None:
    fleet = fleet_factory(8)
    wrong = fleet.corrupt_image("dgx6", SPARKRING)
    code, status = _status(fleet)
    assert code == 1
    spark = next(i for i in status["images"] if i["ref"].startswith(SPARKRING))
    assert spark["presence"]["dgx6"] == "wrong-id" and spark["presence"]["dgx5"] == "digest"
    (problem,) = status["problems"]
    assert problem["node"] == "dgx6" and "another image than the pinned id" in problem["message"]
    fix = problem["fix"].split()
    assert fix[:3] == ["cockpit", "sync-image", "--recipe"] and "--cluster" in fix, fix
    table = run_cockpit("--inventory", fleet.inventory_dir, "status")
    assert "✗ id" in table.stdout and f"fix: {problem['fix']}" in table.stdout
    synced = run_cockpit("--inventory", fleet.inventory_dir, *fix[1:])
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert "remove the wrong image on dgx6" in synced.stdout, synced.stdout
    ids = [i["Id"] for i in fleet.images("dgx6")]
    assert wrong not in ids
    code, status = _status(fleet)
    spark = next(i for i in status["images"] if i["ref"].startswith(SPARKRING))
    assert spark["presence"]["dgx6"] == "digest" and status["problems"] == [], status["problems"]
