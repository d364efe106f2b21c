"""The shipped inventory validates, and each of the seed's failure rules catches its broken copy."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from cockpit.config import check_inventory, load_inventory
from cockpit.config.inventory import PROJECT_RECIPES
from cockpit.errors import InputError
from tests.cli_runner import run_cockpit

PRO = "mimo26-pro-mopd-8x-sparkring.toml"
FLASH4 = "mimo26-flash-mopd-4x-sparkring.toml"


@pytest.fixture
def inventory_copy(tmp_path: Path) -> Path:
    target = tmp_path / "inv"
    shutil.copytree(PROJECT_RECIPES, target)
    return target


def edit(path: Path, change: Callable[[str], str]) -> None:
    text = path.read_text()
    changed = change(text)
    assert changed != text, "the edit did not apply"
    path.write_text(changed)


def problems_of(root: Path) -> list[str]:
    _, problems = check_inventory(root)
    return [str(p) for p in problems]


def line_of(path: Path, needle: str) -> int:
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if needle in line:
            return number
    raise AssertionError(needle)


def test_shipped_inventory_is_valid() -> None:
    inventory = load_inventory(PROJECT_RECIPES)
    assert set(inventory.recipes) >= {
        "mimo26-flash-mopd-4x-sparkring",
        "mimo26-flash-mopd-2x-sparkring",
        "mimo26-pro-mopd-8x-sparkring",
    }
    assert set(inventory.clusters) >= {
        "8nodes-switch",
        "dgx58-switch",
        "4nodes-switch",
        "2nodes-dac",
    }
    assert inventory.clusters["8nodes-switch"].nodes == [f"dgx{i}" for i in range(1, 9)]
    assert inventory.clusters["dgx58-switch"].nodes == ["dgx5", "dgx6", "dgx7", "dgx8"]
    assert inventory.clusters["2nodes-dac"].nodes == ["dgx1", "dgx2"]
    dac = inventory.clusters["2nodes-dac"]
    assert dac.fabric == "direct-pair" and dac.nccl.gid_index == 3
    assert all(h.endswith("f1") for h in dac.nccl.hcas)
    assert all(h.endswith("f0") for h in inventory.clusters["dgx58-switch"].nccl.hcas)


def test_validate_command_passes_on_shipped_recipes() -> None:
    result = run_cockpit("--inventory", PROJECT_RECIPES, "validate")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok: 4 recipes")


def test_tp6_pro_is_rejected_with_the_divide_explanation(inventory_copy: Path) -> None:
    """Seed §4: MiMo Pro has 128 q / 8 KV heads; TP6 is not buildable."""
    pro6 = inventory_copy / "mimo26-pro-mopd-6x-sparkring.toml"
    pro6.write_text(
        (inventory_copy / PRO)
        .read_text()
        .replace('name = "mimo26-pro-mopd-8x-sparkring"', 'name = "mimo26-pro-mopd-6x-sparkring"')
        .replace("nodes = 8", "nodes = 6")
        .replace('clusters = ["8nodes-switch"]', 'clusters = ["dgx16"]')
    )
    edit(
        inventory_copy / "clusters.toml",
        lambda t: (
            t + '\n[clusters.dgx16]\nnodes = ["dgx1","dgx2","dgx3","dgx4","dgx5","dgx6"]\n'
            'fabric = "switch"\n[clusters.dgx16.nccl]\nhcas = ["rocep1s0f0"]\ngid_index = 3\n'
            'socket_ifname = "enp1s0f0np0"\n'
        ),
    )
    problems = problems_of(inventory_copy)
    assert len(problems) == 1, problems
    line = line_of(pro6, "nodes = 6")
    assert problems[0] == (
        f"{pro6}:{line}: lane.nodes: tensor parallel size 6 does not divide 128 attention heads / "
        "8 KV heads (vLLM's divide() rejects it at engine build; zero-padding KV heads costs "
        "quality); use TP in {1, 2, 4, 8}"
    )


def test_node_count_must_match_cluster(inventory_copy: Path) -> None:
    path = inventory_copy / FLASH4
    edit(
        path,
        lambda t: t.replace(
            'clusters = ["dgx58-switch", "4nodes-switch"]',
            'clusters = ["dgx58-switch", "2nodes-dac"]',
        ),
    )
    (problem,) = problems_of(inventory_copy)
    assert f"{path}:{line_of(path, 'clusters = [')}: lane.clusters:" in problem
    assert "cluster '2nodes-dac' has 2 nodes but the recipe needs 4" in problem


def test_flashinfer_flags_are_mutually_exclusive(inventory_copy: Path) -> None:
    """Seed §1: --no-enable-flashinfer-autotune + kernel-config autotune = engine ValueError."""
    path = inventory_copy / FLASH4
    edit(
        path,
        lambda t: t.replace(
            "[env]", "kernel_config = { enable_flashinfer_autotune = false }\n\n[env]", 1
        ),
    )
    (problem,) = problems_of(inventory_copy)
    assert f"{path}:{line_of(path, 'kernel_config =')}: serve.kernel_config:" in problem
    assert "--no-enable-flashinfer-autotune" in problem and "ValueError" in problem


def test_dropped_env_key_must_not_reappear(inventory_copy: Path) -> None:
    path = inventory_copy / FLASH4
    edit(path, lambda t: t.replace("[env]\n", '[env]\nNCCL_SWITCHLESS_RING_ONLY = "1"\n', 1))
    (problem,) = problems_of(inventory_copy)
    assert (
        f"{path}:{line_of(path, 'NCCL_SWITCHLESS_RING_ONLY = ')}: env.NCCL_SWITCHLESS_RING_ONLY:"
        in problem
    )
    assert "dropped by a documented deviation" in problem


def test_nccl_block_keys_come_from_the_cluster(inventory_copy: Path) -> None:
    path = inventory_copy / FLASH4
    edit(path, lambda t: t.replace("[env]\n", '[env]\nNCCL_IB_HCA = "mlx5_0"\n', 1))
    (problem,) = problems_of(inventory_copy)
    assert "env.NCCL_IB_HCA: NCCL_IB_HCA comes from the cluster's [nccl] block" in problem


def test_image_must_be_by_digest(inventory_copy: Path) -> None:
    path = inventory_copy / FLASH4
    edit(path, lambda t: t.replace("sparkring@sha256:c977a2d2", "sparkring:latest"))
    (problem,) = problems_of(inventory_copy)
    assert (
        f"{path}:{line_of(path, 'ref = ')}: image.ref: image must be referenced by digest"
        in problem
    )


def test_max_model_len_within_model_maximum(inventory_copy: Path) -> None:
    path = inventory_copy / "qwen3-0.6b-2x.toml"
    edit(path, lambda t: t.replace("max_model_len = 32768", "max_model_len = 65536"))
    (problem,) = problems_of(inventory_copy)
    assert "serve.max_model_len: max_model_len 65536 exceeds the model's maximum 40960" in problem


def test_unknown_key_names_line_and_suggests(inventory_copy: Path) -> None:
    path = inventory_copy / FLASH4
    edit(path, lambda t: t.replace("max_num_seqs = 16", "max_num_seq = 16"))
    problems = problems_of(inventory_copy)
    line = line_of(path, "max_num_seq = 16")
    assert (
        f"{path}:{line}: serve.max_num_seq: unknown key 'max_num_seq' (did you mean 'max_num_seqs'?)"
        in problems
    )
    assert len(problems) == 1  # not also "serve.max_num_seqs: required key is missing"


def test_broken_toml_names_the_line(inventory_copy: Path) -> None:
    path = inventory_copy / FLASH4
    edit(path, lambda t: t.replace("max_num_seqs = 16", "max_num_seqs = = 16"))
    (problem,) = problems_of(inventory_copy)
    assert re.match(
        rf"{re.escape(str(path))}:{line_of(path, 'max_num_seqs')}: invalid TOML", problem
    )


def test_hostile_names_are_rejected(inventory_copy: Path) -> None:
    edit(
        inventory_copy / "clusters.toml",
        lambda t: t.replace('host = "dgx3.example.lan"', 'host = "dgx3;reboot"'),
    )
    edit(
        inventory_copy / FLASH4, lambda t: t.replace('VLLM_LM_HEAD_A16 = "1"', '"X;rm -rf /" = "1"')
    )
    problems = problems_of(inventory_copy)
    assert any("nodes.dgx3.host: 'dgx3;reboot' is not allowed here" in p for p in problems)
    assert any("env.X;rm -rf /" in p for p in problems)


def test_validate_lists_every_problem_with_exit_2(inventory_copy: Path) -> None:
    edit(
        inventory_copy / FLASH4,
        lambda t: t.replace("sparkring@sha256:c977a2d2", "sparkring:latest"),
    )
    edit(inventory_copy / PRO, lambda t: t.replace("max_num_seqs = 16", "max_num_seqs = -1"))
    result = run_cockpit("--inventory", inventory_copy, "validate")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 3 and lines[-1].startswith("2 problem(s)")
    assert "Traceback" not in result.stderr


def test_commands_refuse_a_broken_inventory_in_one_line(inventory_copy: Path) -> None:
    edit(inventory_copy / PRO, lambda t: t.replace("[serve]", "[serve\n"))
    result = run_cockpit("--inventory", inventory_copy, "lanes")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and f"{PRO}:" in result.stderr


def test_inventory_resolution_env_var(
    inventory_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    edit(
        inventory_copy / "clusters.toml",
        lambda t: t.replace("dgx1.example.lan", "spark-a.example.lan"),
    )
    result = run_cockpit(
        "lanes", "--format", "json", env={"COCKPIT_INVENTORY": str(inventory_copy)}
    )
    assert result.returncode == 0, result.stderr
    monkeypatch.setenv("COCKPIT_INVENTORY", str(inventory_copy))
    assert load_inventory().nodes["dgx1"].host == "spark-a.example.lan"


def test_load_inventory_raises_input_error(inventory_copy: Path) -> None:
    (inventory_copy / "clusters.toml").unlink()
    with pytest.raises(InputError, match=r"clusters\.toml: missing"):
        load_inventory(inventory_copy)


def test_relative_cache_paths_are_refused(inventory_copy: Path) -> None:
    """Docker reads a relative `-v hf-cache:…` as an empty named volume and refuses `a/b`."""
    path = inventory_copy / "clusters.toml"
    edit(path, lambda t: t.replace('model_cache = "/srv/hf-cache"', 'model_cache = "hf-cache"'))
    edit(path, lambda t: t.replace("[defaults]\n", '[defaults]\ncompile_cache = "vllm-cache"\n'))
    edit(
        path,
        lambda t: t.replace('host = "dgx3.example.lan"', 'host = "dgx3.lan"\nmodel_cache = "~/hf"'),
    )
    problems = problems_of(inventory_copy)
    reason = "must be an absolute path on the node: docker reads a relative -v source as a named"
    for field_name, value, needle in (
        ("defaults.model_cache", "hf-cache", 'model_cache = "hf-cache"'),
        ("defaults.compile_cache", "vllm-cache", 'compile_cache = "vllm-cache"'),
        ("nodes.dgx3.model_cache", "~/hf", 'model_cache = "~/hf"'),
    ):
        line = line_of(path, needle)
        assert any(
            p.startswith(f"{path}:{line}: {field_name}: {reason}")
            and p.endswith(f"(got {value!r})")
            for p in problems
        ), (field_name, problems)
    result = run_cockpit("--inventory", inventory_copy, "validate")
    assert result.returncode == 2 and result.stderr.count(reason) == 3


def test_a_nodes_own_cache_wins(inventory_copy: Path) -> None:
    """node > cluster > defaults, in the rendered `-v` of that node's rank only."""
    from cockpit.plan.render import plan_lane

    own = 'host = "dgx5.example.lan"\nmodel_cache = "/nvme/hf"\ncompile_cache = "/nvme/vllm"'
    edit(inventory_copy / "clusters.toml", lambda t: t.replace('host = "dgx5.example.lan"', own))
    inventory = load_inventory(inventory_copy)
    recipe = inventory.recipe("qwen3-0.6b-2x")
    cluster = inventory.cluster("dgx56-switch")
    assert inventory.model_caches(cluster) == {"dgx5": "/nvme/hf", "dgx6": "/srv/hf-cache"}
    plan = plan_lane(inventory, recipe, cluster)
    mounts = {
        r.node: [a for i, a in enumerate(r.argv) if r.argv[i - 1] == "-v"] for r in plan.ranks
    }
    assert mounts["dgx5"][0].startswith("/nvme/hf:") and mounts["dgx5"][1].startswith("/nvme/vllm/")
    assert mounts["dgx6"][0].startswith("/srv/hf-cache:")
    assert mounts["dgx6"][1].startswith("/srv/vllm-cache/")


ALL_CLUSTERS = {"4nodes-switch", "dgx58-switch", "8nodes-switch", "dgx56-switch", "2nodes-dac"}


@pytest.mark.parametrize(
    ("typo", "fixed", "problem", "broken"),
    [
        (
            'fabirc = "direct-pair"',
            'fabric = "direct-pair"',
            "clusters.2nodes-dac.fabirc: unknown key 'fabirc' (did you mean 'fabric'?)",
            {"2nodes-dac"},
        ),
        (
            'hca = ["rocep1s0f1", "roceP2p1s0f1"]',
            'hcas = ["rocep1s0f1", "roceP2p1s0f1"]',
            "clusters.2nodes-dac.nccl.hca: unknown key 'hca' (did you mean 'hcas'?)",
            {"2nodes-dac"},
        ),
        (
            'nodes = ["dgx1", "dgx22"]',
            'nodes = ["dgx1", "dgx2"]',
            "clusters.2nodes-dac.nodes: unknown node 'dgx22' (did you mean 'dgx2'?)",
            {"2nodes-dac"},
        ),
        (
            "[clusters.2nodes-dca.nccl]",
            "[clusters.2nodes-dac.nccl]",
            "clusters.2nodes-dac: [clusters.2nodes-dca…] (line 89) looks like this cluster's "
            "table with a typo in its name: give both tables one name",
            {"2nodes-dac", "2nodes-dca"},
        ),
        (
            "[nodes.dgx11]",
            "[nodes.dgx1]",
            "clusters.4nodes-switch.nodes: unknown node 'dgx1' (did you mean 'dgx11'?); "
            "named by 8nodes-switch, 2nodes-dac too",
            {"4nodes-switch", "8nodes-switch", "2nodes-dac"},
        ),
        (
            'hots = "dgx6.example.lan"',
            'host = "dgx6.example.lan"',
            "nodes.dgx6.hots: unknown key 'hots' (did you mean 'host'?)",
            {"dgx58-switch", "8nodes-switch", "dgx56-switch"},
        ),
        (
            "[nodes.Dgx6]",
            "[nodes.dgx6]",
            "nodes.Dgx6.[key]: 'Dgx6' is not allowed here (must match ",
            {"dgx58-switch", "8nodes-switch", "dgx56-switch"},
        ),
    ],
)
def test_one_typo_in_a_cluster_is_one_problem_and_breaks_only_its_clusters(
    inventory_copy: Path, typo: str, fixed: str, problem: str, broken: set[str]
) -> None:
    """Issue 15: one typo in clusters.toml cascaded (7 errors) and every command refused the
    whole fleet; the recipes that name the cluster are not blamed for it either."""
    path = inventory_copy / "clusters.toml"
    edit(path, lambda t: t.replace(fixed, typo, 1))
    (found,) = problems_of(inventory_copy)
    assert found.startswith(f"{path}:") and problem in found, found
    with pytest.raises(InputError):
        load_inventory(inventory_copy)  # the strict load (`validate`, `recipe import`) refuses
    usable = load_inventory(inventory_copy, partial=True)
    assert set(usable.clusters) == ALL_CLUSTERS - broken
    assert {c for b in usable.broken for c in b.clusters} == broken
    assert [str(b.problem) for b in usable.broken] == [found]
    assert len(usable.recipes) == 4  # their other clusters, and every node the typo spares
    assert len(usable.nodes) == (7 if "dgx6" in typo.lower() else 8)  # a node's own typo only


def test_a_mistake_outside_the_clusters_still_refuses_everything(inventory_copy: Path) -> None:
    edit(inventory_copy / "clusters.toml", lambda t: t.replace("[ssh]", "[ssh"))
    with pytest.raises(InputError, match="invalid TOML"):
        load_inventory(inventory_copy, partial=True)
    edit(inventory_copy / "clusters.toml", lambda t: t.replace("[ssh", "[ssh]\nconnect_timeou = 3"))
    with pytest.raises(InputError, match="did you mean 'connect_timeout'"):
        load_inventory(inventory_copy, partial=True)


def test_a_broken_node_no_cluster_names_is_said_as_the_node(inventory_copy: Path) -> None:
    path = inventory_copy / "clusters.toml"
    edit(path, lambda t: t + '\n[nodes.dgx9]\nhost = "dgx9;x"\n')
    usable = load_inventory(inventory_copy, partial=True)
    (breakage,) = usable.broken
    assert str(breakage).startswith(f"node dgx9: broken: {path}:")
    assert set(usable.clusters) == ALL_CLUSTERS


def test_one_broken_cluster_leaves_the_commands_on_the_others_usable(inventory_copy: Path) -> None:
    """Issue 15: a typo in one cluster's table refused every command on the whole fleet. A
    command on another cluster now runs, with one warning line; one on the broken cluster is
    refused with the mistake (exit 2); `validate` still lists it."""
    path = inventory_copy / "clusters.toml"
    edit(path, lambda t: t.replace('fabric = "direct-pair"', 'fabirc = "direct-pair"', 1))
    line = line_of(path, "fabirc")
    problem = (
        f"{path}:{line}: clusters.2nodes-dac.fabirc: unknown key 'fabirc' (did you mean 'fabric'?)"
    )
    warning = (
        f"warning: cluster 2nodes-dac: broken: {problem}; left out, the rest of the fleet is usable"
    )
    lanes = run_cockpit("--inventory", inventory_copy, "lanes", "--format", "json")
    assert lanes.returncode == 0 and lanes.stderr.splitlines() == [warning]
    listed = {(row["recipe"], row["cluster"]) for row in json.loads(lanes.stdout)}
    assert ("mimo26-flash-mopd-2x-sparkring", "dgx56-switch") in listed
    assert not any(cluster == "2nodes-dac" for _, cluster in listed)
    flash2 = "mimo26-flash-mopd-2x-sparkring"
    rendered = run_cockpit(
        "--inventory", inventory_copy, "render", "--recipe", flash2, "--cluster", "dgx56-switch"
    )
    assert rendered.returncode == 0 and rendered.stderr.splitlines() == [warning]
    assert "vllm serve" in rendered.stdout or "docker run" in rendered.stdout
    refused = run_cockpit(
        "--inventory", inventory_copy, "render", "--recipe", flash2, "--cluster", "2nodes-dac"
    )
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [f"error: cluster '2nodes-dac' is broken: {problem}"]
    assert run_cockpit("--inventory", inventory_copy, "validate").returncode == 2


def test_an_operation_spares_the_nodes_a_broken_cluster_names(inventory_copy: Path) -> None:
    """A broken table's production flag and lanes are not known: an operation may change only
    a cluster that shares no node with it, and none when its nodes cannot be read."""
    path = inventory_copy / "clusters.toml"
    edit(path, lambda t: t.replace('fabric = "direct-pair"', 'fabirc = "direct-pair"', 1))
    usable = load_inventory(inventory_copy, partial=True)
    assert usable.operable("dgx56-switch").nodes == ["dgx5", "dgx6"]
    with pytest.raises(
        InputError,
        match=r"cluster '4nodes-switch' shares dgx1, dgx2 with cluster 2nodes-dac: broken: ",
    ):
        usable.operable("4nodes-switch")
    with pytest.raises(InputError, match="cluster '2nodes-dac' is broken: "):
        usable.operable("2nodes-dac")
    assert usable.cluster("4nodes-switch").nodes[:2] == ["dgx1", "dgx2"]  # looking is fine
    edit(path, lambda t: t.replace('nodes = ["dgx1", "dgx2"]', 'nodse = ["dgx1", "dgx2"]', 1))
    unreadable = load_inventory(inventory_copy, partial=True)
    with pytest.raises(InputError, match="its nodes cannot be read"):
        unreadable.operable("dgx56-switch")


def test_a_broken_node_table_takes_every_cluster_of_the_node_out_of_reach(
    inventory_copy: Path,
) -> None:
    path = inventory_copy / "clusters.toml"
    edit(path, lambda t: t.replace('host = "dgx6.example.lan"', 'hots = "dgx6.example.lan"', 1))
    usable = load_inventory(inventory_copy, partial=True)
    (breakage,) = usable.broken
    assert breakage.nodes == tuple(f"dgx{i}" for i in range(1, 9))  # 8nodes-switch is one of them
    with pytest.raises(InputError, match="shares dgx1, dgx2, dgx3, dgx4 with"):
        usable.operable("4nodes-switch")
