"""The model sync's pure parts: source and destinations from facts, shared caches, the tar size,
quoting of every value, and preflight naming `sync-model` as the fix."""

from __future__ import annotations

import hashlib
import shlex
import subprocess
from pathlib import Path

import pytest

from cockpit.config import load_inventory
from cockpit.config.models import ModelFacts
from cockpit.errors import InputError
from cockpit.ops.facts import NodeFacts
from cockpit.ops.model_sync_plan import (
    MANIFEST_SCRIPT,
    CacheIdentity,
    held_command,
    manifest_blobs,
    manifest_command,
    model_dir,
    model_relay_command,
    parse_held,
    parse_identity,
    plan_model_sync,
    receive_command,
    send_command,
    tar_size,
)
from cockpit.ops.preflight import check_snapshot, snapshot_problems
from cockpit.plan import plan_lane

RECIPES = Path(__file__).resolve().parents[2] / "recipes"
PIN = "abcdef12"
GOOD = "abcdef12" + "0" * 56
BAD = "12345678" + "0" * 56
NODES = ["dgx1", "dgx2", "dgx3", "dgx4"]


@pytest.fixture
def model() -> ModelFacts:
    recipe = load_inventory(RECIPES).recipe("qwen3-0.6b-2x")
    return recipe.model.model_copy(update={"config_sha256": PIN})


def fact(node: str, sha: str | None = GOOD, present: bool = True) -> NodeFacts:
    return NodeFacts(node=node, snapshot_present=present, config_sha256=sha)


def own(*nodes: str) -> dict[str, CacheIdentity]:
    return {n: CacheIdentity(f"1:{i}") for i, n in enumerate(nodes)}


def test_missing_and_corrupt_nodes_are_copied_from_the_first_matching(model: ModelFacts) -> None:
    facts = {
        "dgx1": fact("dgx1", BAD),
        "dgx2": fact("dgx2"),
        "dgx3": fact("dgx3", present=False),
        "dgx4": fact("dgx4"),
    }
    plan = plan_model_sync(model, NODES, facts, own(*NODES))
    assert plan.source == "dgx2" and plan.copy == ("dgx1", "dgx3") and plan.current == ("dgx4",)
    reasons = dict(plan.reasons)
    assert (
        "does not match the pin" in reasons["dgx1"] and reasons["dgx3"] == "not in the model cache"
    )
    assert "dgx2 → dgx1 (config.json sha256" in plan.describe()


def test_a_given_source_must_match_and_be_reachable(model: ModelFacts) -> None:
    facts = {n: fact(n) for n in NODES} | {"dgx1": fact("dgx1", BAD)}
    facts["dgx4"] = NodeFacts(node="dgx4", unreachable="timed out")
    with pytest.raises(InputError, match=r"source dgx1's snapshot of .*does not match"):
        plan_model_sync(model, NODES, facts, own(*NODES), source="dgx1")
    with pytest.raises(InputError, match="source dgx4 is unreachable"):
        plan_model_sync(model, NODES, facts, own(*NODES), source="dgx4")
    plan = plan_model_sync(model, NODES, facts, own(*NODES), source="dgx3")
    assert plan.source == "dgx3" and plan.copy == ("dgx1",) and plan.unreachable == ("dgx4",)


def test_no_matching_snapshot_is_refused_with_the_fix(model: ModelFacts) -> None:
    facts = {"dgx1": fact("dgx1", BAD), "dgx2": fact("dgx2", present=False)}
    with pytest.raises(InputError, match=r"^no node of the cluster holds .* matching its pins: X$"):
        plan_model_sync(model, ["dgx1", "dgx2"], facts, own("dgx1", "dgx2"), fix="X")


def test_shared_caches_are_skipped_by_marker_or_inode(model: ModelFacts) -> None:
    facts = {n: fact(n, present=False) for n in NODES} | {"dgx1": fact("dgx1")}
    identities = {
        "dgx1": CacheIdentity("5:1", "nas"),
        "dgx2": CacheIdentity("9:1", "nas"),  # another client's device number, the same marker
        "dgx3": CacheIdentity("7:7"),
        "dgx4": CacheIdentity("7:7"),  # the same folder as dgx3's: copied once
    }
    plan = plan_model_sync(model, NODES, facts, identities)
    assert plan.copy == ("dgx3",)
    assert plan.shared == (("dgx2", "dgx1"), ("dgx4", "dgx3"))
    assert plan.verify == ("dgx3", "dgx2", "dgx4")
    assert "shared cache, skipped: dgx2 (with dgx1), dgx4 (with dgx3)" in plan.describe()


def test_an_unreadable_identity_never_counts_as_shared(model: ModelFacts) -> None:
    facts = {"dgx1": fact("dgx1"), "dgx2": fact("dgx2", present=False)}
    plan = plan_model_sync(model, ["dgx1", "dgx2"], facts, {"dgx1": CacheIdentity()})
    assert plan.copy == ("dgx2",) and plan.shared == ()


def test_identity_output_is_parsed() -> None:
    assert parse_identity("64768:131\n") == CacheIdentity("64768:131")
    assert parse_identity("64768:131\nabc123").key == "id:abc123"
    assert parse_identity("-\n").key is None
    assert parse_identity("abc123\n").key == "id:abc123"  # what the mark script prints
    assert parse_identity("") == CacheIdentity()


def test_tar_size_is_the_size_tar_writes(tmp_path: Path) -> None:
    model = tmp_path / "models--o--n"
    snap = model / "snapshots" / "c1899de289a04d12"
    (model / "blobs").mkdir(parents=True)
    snap.mkdir(parents=True)
    (model / "blobs" / ("a" * 64)).write_bytes(b"x" * 70000)
    (snap / "w.safetensors").symlink_to("../../blobs/" + "a" * 64)
    (snap / "config.json").write_text("{}" * 300)
    (snap / ("long-" * 30 + ".json")).write_text("1")
    listing = subprocess.run(["bash", "-c", MANIFEST_SCRIPT, "m", str(model), snap.name],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    stream = subprocess.run(shlex.split(send_command(str(model), snap.name)),
                            capture_output=True, check=True).stdout  # fmt: skip
    assert tar_size(listing) == len(stream)


def hf_model(root: Path, blobs: dict[str, bytes]) -> tuple[Path, str]:
    """An HF model folder: one snapshot whose files are symlinks to `blobs` (name → content)."""
    model = root / "models--o--n"
    snap = model / "snapshots" / "abc1234"
    (model / "blobs").mkdir(parents=True)
    snap.mkdir(parents=True)
    for i, (name, data) in enumerate(blobs.items()):
        (model / "blobs" / name).write_bytes(data)
        (snap / f"w{i}.safetensors").symlink_to(f"../../blobs/{name}")
    (snap / "config.json").write_text("{}")
    return model, snap.name


def bash(command: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(shlex.split(command), input=stdin, capture_output=True, timeout=30)


def test_blobs_held_whole_are_left_out_and_the_size_follows(tmp_path: Path) -> None:
    """Only blobs named by their content's sha256 count as held; the send leaves out the
    skipped ones and `tar_size` says how big the smaller stream is."""
    whole, other = b"w" * 3000, b"o" * 5000
    named = hashlib.sha256(whole).hexdigest()
    lying = "b" * 64  # a sha256 name its content does not match
    model, rev = hf_model(tmp_path / "src", {named: whole, lying: other})
    listing = bash(manifest_command(str(model), rev)).stdout.decode()
    blobs = manifest_blobs(listing)
    assert blobs == {named: 3000, lying: 5000}
    held = parse_held(bash(held_command(str(model), blobs)).stdout.decode(), blobs)
    assert held == {named}
    stream = bash(send_command(str(model), rev, held)).stdout
    assert len(stream) == tar_size(listing, held) < tar_size(listing)
    names = bash("tar -tf -", stream).stdout.decode().split()
    assert f"blobs/{lying}" in names and f"blobs/{named}" not in names


def test_a_cut_receive_keeps_the_whole_blobs_and_a_killed_ones_are_salvaged(
    tmp_path: Path,
) -> None:
    first, second = b"1" * 20000, b"2" * 20000
    a, b = sorted(hashlib.sha256(d).hexdigest() for d in (first, second))
    data = {hashlib.sha256(first).hexdigest(): first, hashlib.sha256(second).hexdigest(): second}
    model, rev = hf_model(tmp_path / "src", {a: data[a], b: data[b]})
    stream = bash(send_command(str(model), rev)).stdout
    dest = tmp_path / "dst" / "models--o--n"
    cut = stream[: stream.index(data[b][:512])]  # blob a whole, b's header only
    received = bash(receive_command(str(dest), rev), cut)
    assert received.returncode != 0 and not (dest / "snapshots").exists()
    assert [p.name for p in (dest / "blobs").iterdir()] == [a]
    (dest / "blobs" / a).unlink()  # as if the receive had been killed: its temp folder stays
    left = dest / ".cockpit-sync.killed" / "blobs"
    left.mkdir(parents=True)
    (left / a).write_bytes(data[a])
    (left / b).write_bytes(data[b][:100])
    held = bash(held_command(str(dest), {a: 20000, b: 20000})).stdout.decode()
    assert parse_held(held, {a, b}) == {a} and not list(dest.glob(".cockpit-sync.*"))


def test_the_relay_carries_the_snapshot_command_to_every_hop(model: ModelFacts) -> None:
    folders = {"dgx1": "/srv/a b", "dgx2": "/srv/it's $(x)", "dgx3": "/c"}
    facts = {"dgx1": fact("dgx1"), "dgx2": fact("dgx2", BAD), "dgx3": fact("dgx3", None, False)}
    plan = plan_model_sync(model, ["dgx1", "dgx2", "dgx3"], facts, own(*folders), width=1)
    assert plan.chains == (("dgx2", "dgx3"),)
    assert "dgx1 → dgx2 (config.json sha256" in plan.describe()
    argv = shlex.split(model_relay_command(plan, folders, model.revision, {"c" * 64}))
    assert argv[:2] == ["bash", "-c"] and argv[-1] == "2>&1"
    hops = argv[-6:-1]
    assert hops[0] == "dgx2" and hops[2] == "dgx3" and hops[4] == ""
    assert hops[1] == receive_command(folders["dgx2"], model.revision)
    assert shlex.split(argv[5])[-3:] == [folders["dgx1"], model.revision, "c" * 64]
    star = plan_model_sync(model, ["dgx1", "dgx2", "dgx3"], facts, own(*folders), width=2)
    assert star.chains == (("dgx2",), ("dgx3",))


def test_every_value_reaches_the_shell_quoted(model: ModelFacts) -> None:
    hostile = "/srv/it's $(reboot) `id`;x\nnewline"
    with pytest.raises(InputError, match="control characters"):
        model_dir(model, hostile)
    folder = model_dir(model, "/srv/it's $(reboot) `id`;x")
    assert folder == "/srv/it's $(reboot) `id`;x/hub/models--Qwen--Qwen3-0.6B"
    for command in (send_command(folder, model.revision), receive_command(folder, model.revision)):
        argv = shlex.split(command)
        assert argv[0:2] == ["bash", "-c"] and argv[-2:] == [folder, model.revision]
    with pytest.raises(InputError, match=r"'\.\.' components are refused"):
        model_dir(model, "/srv/../etc")


def test_receive_keeps_a_cut_stream_out_of_place(tmp_path: Path) -> None:
    """Cut exactly between two tar members (tar itself takes that as a whole archive): no end
    marker, so nothing lands at the snapshot's path and the temp folder is gone."""
    source = tmp_path / "src" / "models--o--n"
    snap = source / "snapshots" / "abc1234"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    stream = subprocess.run(shlex.split(send_command(str(source), "abc1234")),
                            capture_output=True, check=True).stdout  # fmt: skip
    dest = tmp_path / "dst" / "models--o--n"
    cut = stream[: 3 * 512]  # the snapshot folder's header, config.json's header and data
    received = subprocess.run(shlex.split(receive_command(str(dest), "abc1234")), input=cut,
                              capture_output=True)  # fmt: skip
    assert received.returncode != 0 and b"cut before its end" in received.stderr
    assert not (dest / "snapshots").exists() and not list(dest.glob(".cockpit-sync.*"))
    whole = subprocess.run(shlex.split(receive_command(str(dest), "abc1234")), input=stream,
                           capture_output=True)  # fmt: skip
    assert whole.returncode == 0, whole.stderr
    assert (dest / "snapshots" / "abc1234" / "config.json").read_text() == "{}"


def test_preflight_names_sync_model_when_a_node_of_the_cluster_holds_it(
    model: ModelFacts,
) -> None:
    inventory = load_inventory(RECIPES)
    recipe = inventory.recipe("qwen3-0.6b-2x").model_copy(update={"model": model})
    plan = plan_lane(inventory, recipe, inventory.cluster("2nodes-dac"))
    fixes = [f.fix for f in check_snapshot(plan, {"dgx1": fact("dgx1"), "dgx2": fact("dgx2", BAD)})]
    assert fixes == [
        "cockpit sync-model --recipe qwen3-0.6b-2x --cluster 2nodes-dac (copies it from dgx1)"
    ]
    missing = {"dgx1": fact("dgx1", BAD), "dgx2": fact("dgx2", present=False)}
    fixes = [f.fix for f in check_snapshot(plan, missing)]
    assert "huggingface-cli download" in fixes[0] and "re-download" in fixes[1]
    assert snapshot_problems(model, fact("dgx1")) == []
    # launch --sync-model: no failure when a node holds it, the same failures when none does
    held = {"dgx1": fact("dgx1"), "dgx2": fact("dgx2", present=False)}
    assert check_snapshot(plan, held, will_sync=True) == []
    assert check_snapshot(plan, missing, will_sync=True) == check_snapshot(plan, missing)
