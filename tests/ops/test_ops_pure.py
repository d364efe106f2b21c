"""The pure core of the operations: preflight, locks, sync planning, relay output, history."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from cockpit.config import load_inventory
from cockpit.errors import InputError
from cockpit.ops.facts import NodeFacts, parse_facts, parse_listening, parse_weights, port_taken
from cockpit.ops.history import BootHistory, eta_seconds
from cockpit.ops.locks import (
    LEASE,
    LockRecord,
    LockRefused,
    NodeLock,
    break_lock_command,
    lock_fix,
    stale_reason,
)
from cockpit.ops.preflight import lane_fit, preflight
from cockpit.ops.sync_plan import image_relay_command, parse_hop_line, plan_sync, split_chains
from cockpit.plan import plan_lane
from cockpit.plan.memory_fit import MemoryFit
from cockpit.telemetry.docker_out import ContainerRow

INVENTORY = load_inventory(Path(__file__).resolve().parents[2] / "recipes")
RECIPE = INVENTORY.recipe("mimo26-flash-mopd-2x-sparkring")
PLAN = plan_lane(INVENTORY, RECIPE, INVENTORY.cluster("2nodes-dac"))
FULL_ID = "sha256:" + RECIPE.image.image_id.removeprefix("sha256:") + "0" * 52
FULL_REF = RECIPE.image.ref + "0" * 56


def good(node: str, **changes: object) -> NodeFacts:
    base = dict(
        node=node, image_id=FULL_ID, full_ref=FULL_REF,
        has_image_id=True, snapshot_present=True,
        config_sha256=RECIPE.model.config_sha256 + "ab" * 28,
        index_sha256=RECIPE.model.index_sha256 + "cd" * 28,
    )  # fmt: skip
    return NodeFacts(**{**base, **changes})  # type: ignore[arg-type]


def test_clean_facts_pass_preflight() -> None:
    assert preflight(PLAN, {"dgx1": good("dgx1"), "dgx2": good("dgx2")}) == []


def test_every_failed_check_is_listed_at_once_with_a_fix() -> None:
    prod = ContainerRow(
        id="c1", names="cockpit-prod-r0", image="x", state="running", status="Up",
        labels={"cockpit.lane": "prod-4x", "cockpit.cluster": "4nodes-switch"},
    )  # fmt: skip
    facts = {
        "dgx1": good("dgx1", image_id=None, full_ref=None, has_image_id=False, containers=(prod,)),
        "dgx2": good("dgx2", config_sha256="ffff" * 16),
    }
    failures = preflight(PLAN, facts, production_clusters=frozenset({"4nodes-switch"}))
    assert [f.check for f in failures] == ["image", "lane", "snapshot"]
    image, lane, snapshot = failures
    assert image.nodes == ("dgx1",) and "sync-image" in image.fix
    assert "production lane prod-4x" in lane.message and "switch" in lane.fix
    assert "dgx2" in snapshot.message and "61bea4a0" in snapshot.message


def test_unreachable_node_and_busy_port_and_foreign_gpu_process() -> None:
    from cockpit.telemetry.gpu import ComputeApp

    facts = {
        "dgx1": good(
            "dgx1", listening=(("*", PLAN.serve_port),), gpu_apps=(ComputeApp(7, "python3", None),)
        ),
        "dgx2": NodeFacts(node="dgx2", unreachable="no answer within 3 s"),
    }
    failures = preflight(PLAN, facts, master_port=29501)
    assert [f.check for f in failures] == ["reachable", "port", "gpu"]
    assert any("(serve_port)" in f.message for f in failures)


def test_the_lane_itself_already_running_is_refused() -> None:
    own = ContainerRow(
        id="c2", names="cockpit-x-r0", image="x", state="running", status="Up",
        labels={"cockpit.lane": RECIPE.name, "cockpit.cluster": "2nodes-dac"},
    )  # fmt: skip
    facts = {"dgx1": good("dgx1", containers=(own,)), "dgx2": good("dgx2")}
    (failure,) = preflight(PLAN, facts)
    assert failure.check == "lane" and "already runs on dgx1" in failure.message
    assert f"stop --lane {RECIPE.name}" in failure.fix


def test_a_lane_in_the_way_is_one_error_not_one_more_per_port_it_holds() -> None:
    other = ContainerRow(
        id="c3", names="cockpit-qwen-r0", image="x", state="running", status="Up",
        labels={"cockpit.lane": "qwen3-0.6b-2x", "cockpit.cluster": "2nodes-dac"},
    )  # fmt: skip
    held = (("*", PLAN.serve_port), ("*", 29501))
    facts = {"dgx1": good("dgx1", containers=(other,), listening=held), "dgx2": good("dgx2")}
    (failure,) = preflight(PLAN, facts, master_port=29501)
    assert failure.check == "lane" and "lane qwen3-0.6b-2x runs on dgx1" in failure.message


def test_missing_image_is_not_a_failure_when_syncing_first() -> None:
    facts = {"dgx1": good("dgx1"), "dgx2": good("dgx2", image_id=None, full_ref=None)}
    assert preflight(PLAN, facts, will_sync=True) == []
    assert [f.check for f in preflight(PLAN, facts)] == ["image"]


def test_listening_sockets_and_port_collisions() -> None:
    text = "LISTEN 0 4096 127.0.0.15:30000 0.0.0.0:*\nLISTEN 0 128 [::]:22 [::]:*\n"
    listening = parse_listening(text)
    assert listening == (("127.0.0.15", 30000), ("::", 22))
    assert port_taken(listening, "127.0.0.15", 30000)
    assert not port_taken(listening, "127.0.0.16", 30000)
    assert port_taken(listening, "127.0.0.16", 22)


def test_facts_output_resolves_a_digest_prefix_to_the_full_reference() -> None:
    image = {"Id": FULL_ID, "RepoTags": [], "RepoDigests": [FULL_REF], "Size": 5, "Config": {}}
    text = "\n".join(["@@images", json.dumps([image]), "@@containers", "@@snapshot", "present",
                      f"{'a' * 64}  config.json", "@@listen", "@@gpu", "@@end"])  # fmt: skip
    facts = parse_facts("dgx1", text, RECIPE.image.ref, RECIPE.image.image_id)
    assert facts.full_ref == FULL_REF and facts.image_id == FULL_ID and facts.complete
    assert facts.config_sha256 == "a" * 64 and facts.index_sha256 is None
    loaded = json.dumps([{**image, "RepoDigests": []}])
    facts = parse_facts(
        "dgx1", f"@@images\n{loaded}\n@@end", RECIPE.image.ref, RECIPE.image.image_id
    )
    assert not facts.has_digest and facts.has_image_id


def test_lock_message_and_stale_rule() -> None:
    """Issue 31: the node's clock judges a lock by its age since its last renewal; the record's
    own `since` (and an older cockpit's `ttl_s`) decide nothing."""
    record = LockRecord("ana", "desk", 4242, "launch", since=1_790_000_000.0, lane="qwen")
    assert LockRecord.loads(record.dumps()) == record
    assert record.held_message() == (
        "held by ana@desk since 2026-09-21 14:13:20 UTC for operation launch qwen"
    )
    lease = LEASE.seconds
    fresh = NodeLock(record.dumps(), 3.0)
    assert stale_reason(fresh, lease, "desk", lambda pid: True) is None
    assert "gone" in (stale_reason(fresh, lease, "desk", lambda pid: False) or "")
    assert stale_reason(fresh, lease, "other-host", lambda pid: False) is None
    old = NodeLock(record.dumps(), lease + 1)
    assert "not renewed for 61 s" in (stale_reason(old, lease, "x", bool) or "")
    forged = json.dumps({**json.loads(record.dumps()), "since": 4e9, "ttl_s": 1e9})
    assert LockRecord.loads(forged) is not None
    assert stale_reason(NodeLock(forged, lease + 1), lease, "x", bool) is not None
    assert LockRecord.loads("not json") is None and LockRecord.loads("[]") is None


def test_an_unreadable_lock_is_stale_after_a_lease_and_held_before() -> None:
    """An empty lock file (power lost mid-write) blocked forever; a fresh one is being written."""
    for content in ("", '{"user": '):
        young, aged = NodeLock(content, 5.0), NodeLock(content, LEASE.seconds)
        assert stale_reason(young, LEASE.seconds, "x", bool) is None
        assert "unreadable lock file" in (stale_reason(aged, LEASE.seconds, "x", bool) or "")
        assert "unreadable lock file" in young.held_message()


def test_the_lock_line_is_the_age_by_the_nodes_clock_then_the_record() -> None:
    assert NodeLock.parse("1500\t{}") == NodeLock("{}", 1.5)
    assert NodeLock.parse("-20\t") == NodeLock("", 0.0)  # a file touched from the future
    assert NodeLock.parse("") is None and NodeLock.parse("x\ty") is None


def test_a_refusal_names_the_holder_and_the_way_out() -> None:
    record = LockRecord("alice", "ops-laptop", 1, "launch", 0.0, lane="qwen")
    again = break_lock_command("launch", "qwen", "2nodes-dac")
    assert again == "cockpit launch -r qwen -c 2nodes-dac --break-lock"
    fix = lock_fix(NodeLock(record.dumps(), 2.0), again, LEASE.seconds)
    assert str(LockRefused("dgx1", "held", fix)) == (
        "dgx1 is locked: held — fix: wait for alice@ops-laptop's launch to finish (if it is "
        "gone, its lock is stale in 58 s), or cockpit launch -r qwen -c 2nodes-dac --break-lock"
    )
    empty = lock_fix(NodeLock("", 59.7), again, LEASE.seconds)
    assert empty.startswith("wait for whoever is writing it to finish (if it is gone, its lock is "
                            "stale in 1 s)")  # fmt: skip
    assert break_lock_command("stop", "", "4nodes") == "cockpit stop --cluster 4nodes --break-lock"
    assert break_lock_command("sync", "a b", "c") == "cockpit sync-image -r 'a b' -c c --break-lock"


def test_sync_plan_source_peers_and_chains() -> None:
    lacking = NodeFacts(node="n")
    loaded = good("n", image_id=None, full_ref=None)
    facts = {
        "dgx1": lacking, "dgx2": good("dgx2"), "dgx3": loaded, "dgx4": good("dgx4"),
        "dgx5": NodeFacts(node="dgx5", unreachable="down"), "dgx6": lacking,
    }  # fmt: skip
    nodes = ["dgx1", "dgx2", "dgx3", "dgx4", "dgx5", "dgx6"]
    plan = plan_sync(RECIPE.image.ref, nodes, facts)
    assert plan.source == "dgx2" and plan.ref == FULL_REF
    assert plan.transfer == ("dgx1", "dgx6") and plan.reattach == ("dgx3",)
    assert plan.chains == (("dgx1", "dgx6"),)
    assert "dgx2 → dgx1 → dgx6" in plan.describe()
    assert plan_sync(RECIPE.image.ref, nodes, facts, width=2).chains == (("dgx1",), ("dgx6",))
    with pytest.raises(InputError, match="nothing to sync from"):
        plan_sync(RECIPE.image.ref, ["dgx1"], {"dgx1": lacking})
    with pytest.raises(InputError, match="does not hold"):
        plan_sync(RECIPE.image.ref, nodes, facts, source="dgx1")


def test_chains_split_evenly() -> None:
    peers = [f"p{i}" for i in range(7)]
    assert split_chains(peers, 1) == (tuple(peers),)
    assert split_chains(peers, 3) == (("p0", "p3", "p6"), ("p1", "p4"), ("p2", "p5"))
    assert split_chains(peers, 99) == tuple((p,) for p in peers)


def test_relay_command_quotes_hostile_values_through_real_bash(tmp_path: Path) -> None:
    """The relay passes the ref as data: a hostile ref reaches `docker save` as one argument."""
    hostile = "repo@sha256:0'; touch pwned; echo '"
    (tmp_path / "docker").write_text('#!/bin/bash\nprintf "%s\\n" "$@" > args.txt\n')
    (tmp_path / "docker").chmod(0o755)
    command = image_relay_command(hostile, [])
    subprocess.run(
        ["bash", "-c", command], cwd=tmp_path, env={"PATH": f"{tmp_path}:/usr/bin:/bin"},
        timeout=10, check=False,
    )  # fmt: skip
    assert (tmp_path / "args.txt").read_text().splitlines() == ["save", "--", hostile]
    assert not (tmp_path / "pwned").exists()
    assert shlex.split(command)[-1] == "2>&1"


def test_hop_lines() -> None:
    line = "@@dd dgx3 31457280 bytes (31 MB, 30 MiB) copied, 2.5 s, 12.6 MB/s"
    hop = parse_hop_line(line)
    assert hop is not None and (hop.kind, hop.node, hop.bytes, hop.seconds) == (
        "bytes", "dgx3", 31457280, 2.5,
    )  # fmt: skip
    loaded = parse_hop_line("@@load dgx2 1")
    assert loaded is not None and (loaded.kind, loaded.node, loaded.status) == ("loaded", "dgx2", 1)
    assert parse_hop_line("@@dd dgx3 30+0 records in") is None
    assert parse_hop_line("Loaded image: x") is None


def test_boot_history_gives_the_eta(tmp_path: Path) -> None:
    history = BootHistory(tmp_path / "h.json")
    assert history.last_seconds("lane", "c") is None
    history.record("lane", "c", 120.0, 1.0)
    history.record("lane", "c", 90.0, 2.0)
    assert history.last_seconds("lane", "c") == 90.0
    assert history.last_seconds("lane", "other") is None
    assert eta_seconds(90.0, 30.0) == 60.0 and eta_seconds(90.0, 100.0) == 0.0
    assert eta_seconds(None, 5.0) is None


def test_a_wrong_image_under_the_digest_is_removed_first_and_never_the_source() -> None:
    wrong = "sha256:" + "9" * 64
    facts = {
        "dgx1": good("dgx1", image_id=wrong, wrong_id=wrong, has_image_id=False),
        "dgx2": good("dgx2"),
        "dgx3": good("dgx3", image_id=wrong, wrong_id=wrong, has_image_id=True),
    }
    plan = plan_sync(RECIPE.image.ref, ["dgx1", "dgx2", "dgx3"], facts)
    assert plan.source == "dgx2"  # dgx1 comes first but its digest names the wrong image
    assert plan.remove == (("dgx1", wrong), ("dgx3", wrong))
    assert plan.transfer == ("dgx1",) and plan.reattach == ("dgx3",)  # dgx3 holds the right id
    assert plan.describe().startswith("remove the wrong image on dgx1 (sha256:999999999999)")
    with pytest.raises(InputError, match="not the recipe's pinned image id"):
        plan_sync(RECIPE.image.ref, ["dgx1", "dgx2"], facts, source="dgx1")
    failures = preflight(PLAN, {"dgx1": facts["dgx1"], "dgx2": facts["dgx2"]})
    assert [f.check for f in failures] == ["image"] and failures[0].nodes == ("dgx1",)
    assert failures[0].fix.startswith("cockpit sync-image --recipe mimo26-flash-mopd-2x-sparkring")
    assert preflight(PLAN, {"dgx1": facts["dgx1"], "dgx2": facts["dgx2"]}, will_sync=True) == []


FLASH_CONFIG = json.dumps({
    "num_hidden_layers": 48, "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 192,
    "v_head_dim": 128, "swa_num_key_value_heads": 8, "swa_head_dim": 192, "swa_v_head_dim": 128,
    "sliding_window_size": 128, "hybrid_layer_pattern": [0, 1, 1] * 16,
}, indent=2)  # fmt: skip
FLASH_WEIGHTS = 174 * 2**30  # ~87 GiB a rank at TP2 (seed §2)


def test_the_facts_carry_the_snapshots_config_and_weights() -> None:
    text = "\n".join(["@@snapshot", "present", "@@config", FLASH_CONFIG, "@@weights",
                      f'"total_size": {FLASH_WEIGHTS}', "@@end"])  # fmt: skip
    facts = parse_facts("dgx1", text, RECIPE.image.ref, RECIPE.image.image_id)
    assert json.loads(facts.model_config)["num_hidden_layers"] == 48
    assert facts.weights_bytes == FLASH_WEIGHTS
    assert parse_weights("file 1000\nfile 24\n") == 1024  # no index: the safetensors' sizes
    assert parse_weights("") is None


def test_preflight_refuses_what_vllm_would_refuse_naming_the_file_and_the_field() -> None:
    files = {"model_config": FLASH_CONFIG, "weights_bytes": FLASH_WEIGHTS}
    facts = {"dgx1": good("dgx1", **files), "dgx2": good("dgx2", **files)}
    assert preflight(PLAN, facts) == []
    assert "fits 1 of 16 sequences at 524,288 tokens" in lane_fit(PLAN, facts).line()
    serve = RECIPE.serve.model_copy(update={"max_model_len": 1_048_576})
    long = plan_lane(INVENTORY, RECIPE.model_copy(update={"serve": serve}), PLAN.cluster)
    (failure,) = preflight(long, facts, recipe_file="recipes/flash.toml")
    assert failure.check == "memory"
    assert failure.message.startswith("recipes/flash.toml: serve.max_model_len: max_model_len "
                                      "1,048,576 needs 20.6 GiB of KV per rank")  # fmt: skip
    assert failure.fix == "set max_model_len ≤ 566,771, or raise gpu_memory_utilization to ≥ 0.93"


def test_the_fit_comes_from_the_first_node_that_could_say_or_says_why_not() -> None:
    files = {"model_config": FLASH_CONFIG, "weights_bytes": FLASH_WEIGHTS}
    down = NodeFacts(node="dgx1", unreachable="no answer within 3 s")
    assert isinstance(lane_fit(PLAN, {"dgx1": down, "dgx2": good("dgx2", **files)}), MemoryFit)
    unknown = lane_fit(PLAN, {"dgx1": down, "dgx2": good("dgx2")})
    assert unknown.line() == ("memory per rank: unknown — dgx1 did not answer (no answer within "
                              "3 s); no config.json in the snapshot on dgx2")  # fmt: skip
    bare = good("dgx1", model_config='{"num_hidden_layers": 48}', weights_bytes=1)
    assert lane_fit(PLAN, {"dgx1": bare}).line().endswith("no num_attention_heads (read on dgx1)")
    assert preflight(PLAN, {"dgx1": bare, "dgx2": good("dgx2")}) == []  # unknown: no refusal
