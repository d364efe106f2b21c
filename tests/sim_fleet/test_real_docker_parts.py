"""The pure parts of a real-Docker fleet: the GPU hook's plan, the runc clamp, the lane images."""

from __future__ import annotations

import resource
import sys
import tomllib
from pathlib import Path

from cockpit.config.models import Recipe
from cockpit_sim.fleet.docker_fleet import gpu_parts
from cockpit_sim.fleet.lane_images import (
    LaneImage,
    launcher_files,
    registry_repository,
    rewrite_recipe,
)
from cockpit_sim.tools import gpu_hook, runc_clamp
from cockpit_sim.tools.launchers import IMPORT_ROOTS

RECIPES = Path(__file__).resolve().parents[2] / "recipes"


def test_hook_finds_the_rootfs_and_mounts_parts_read_only_and_the_node_dir_writable() -> None:
    state = {"pid": 4242, "bundle": "/run/b/abc"}
    assert gpu_hook.rootfs_of(state, {"root": {"path": "rootfs"}}) == "/run/b/abc/rootfs"
    assert gpu_hook.rootfs_of(state, {"root": {"path": "/var/m/merged"}}) == "/var/m/merged"
    env = {"COCKPIT_SIM_GPU_PARTS": "/usr/lib:/opt/py", "COCKPIT_SIM_NODE_DIR": "/f/nodes/dgx3"}
    wanted = gpu_hook.mounts(env)
    assert wanted == [("/usr/lib", True), ("/opt/py", True), ("/f/nodes/dgx3", False)]
    script = gpu_hook.mount_script("/m/root", [("/opt/my py", True), ("/f/n", False)])
    assert (
        script
        == "mount --bind -o ro '/opt/my py' '/m/root/opt/my py' && mount --bind /f/n /m/root/f/n"
    )


def test_hook_identity_is_the_nodes_and_quoted_not_the_sessions() -> None:
    env = {
        "COCKPIT_SIM_NODE": "dgx3",
        "COCKPIT_SIM_SPEED": "200.0",
        "COCKPIT_SIM_PYTHON": "/p y/python",
        "HOME": "/f/nodes/dgx3/home",
        "COCKPIT_MEMINFO": "/f/x",
        "DOCKER_HOST": "unix:///tmp/s",
    }
    text = gpu_hook.identity(env, 777)
    assert text.splitlines() == [
        "COCKPIT_SIM_NODE=dgx3",
        "COCKPIT_SIM_SPEED=200.0",
        "COCKPIT_SIM_PYTHON='/p y/python'",
        "COCKPIT_SIM_HOST_PID=777",
    ]


def test_hook_ignores_other_stages() -> None:
    assert gpu_hook.main(["poststop"]) == 0


def test_clamp_lowers_limits_above_the_hosts_hard_limit_only() -> None:
    config = {
        "process": {
            "rlimits": [
                {
                    "type": "RLIMIT_MEMLOCK",
                    "hard": 18446744073709551615,
                    "soft": 18446744073709551615,
                },
                {"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024},
            ]
        }
    }
    limits = {"RLIMIT_MEMLOCK": 8388608, "RLIMIT_NOFILE": 1048576}
    assert runc_clamp.clamp(config, limits.__getitem__)
    assert config["process"]["rlimits"] == [
        {"type": "RLIMIT_MEMLOCK", "hard": 8388608, "soft": 8388608},
        {"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024},
    ]
    assert not runc_clamp.clamp(config, limits.__getitem__)
    assert not runc_clamp.clamp({"process": {}}, limits.__getitem__)
    unlimited = {"process": {"rlimits": [{"type": "RLIMIT_MEMLOCK", "hard": 1 << 40, "soft": 1}]}}
    assert not runc_clamp.clamp(unlimited, lambda _: resource.RLIM_INFINITY)


def test_clamp_is_needed_without_cap_sys_resource() -> None:
    assert runc_clamp.needs_clamp("Name:\tx\nCapEff:\t000001fffeffffff\n")  # bit 24 clear
    assert not runc_clamp.needs_clamp("CapEff:\t000001ffffffffff\n")


def test_launchers_follow_the_recipes_entrypoints() -> None:
    sparkring = launcher_files(["python3", "/opt/sparkring/toolchain.py"])
    assert sorted(sparkring) == ["/opt/sparkring/toolchain.py", "/usr/bin/python3"]
    python, mode = sparkring["/usr/bin/python3"]
    assert mode == 0o755 and 'exec "$COCKPIT_SIM_PYTHON" "$@"' in python
    assert ". /run/cockpit-sim/node.env" in python and "--gpus all" in python
    script, _ = sparkring["/opt/sparkring/toolchain.py"]
    compile(script, "toolchain.py", "exec")
    assert 'run_module("cockpit_sim.engine"' in script
    vllm = launcher_files(["vllm", "serve"])
    assert list(vllm) == ["/usr/bin/vllm"]
    assert 'exec "$COCKPIT_SIM_PYTHON" -m cockpit_sim.engine "$@"' in vllm["/usr/bin/vllm"][0]
    assert launcher_files([]) == {}


def test_registry_repository_replaces_a_registry_host_only() -> None:
    assert (
        registry_repository("127.0.0.1:5000", "ghcr.io/org/sparkring")
        == "127.0.0.1:5000/org/sparkring"
    )
    assert (
        registry_repository("127.0.0.1:5000", "vllm/vllm-openai")
        == "127.0.0.1:5000/vllm/vllm-openai"
    )
    assert registry_repository("127.0.0.1:5000", "localhost/x") == "127.0.0.1:5000/x"
    assert registry_repository("127.0.0.1:5000", "busybox") == "127.0.0.1:5000/busybox"


def test_rewritten_recipe_pins_the_built_image_and_keeps_the_rest() -> None:
    for name in ("mimo26-flash-mopd-4x-sparkring", "qwen3-0.6b-2x"):
        text = (RECIPES / f"{name}.toml").read_text()
        image = LaneImage(
            source_ref="x",
            ref="127.0.0.1:41000/org/name@sha256:" + "ab" * 32,
            image_id="sha256:" + "cd" * 32,
            size_bytes=2_076_160,
            compressed_bytes=1_000_000,
        )
        new = tomllib.loads(rewrite_recipe(text, image))
        old = tomllib.loads(text)
        assert new["image"]["ref"] == image.ref
        assert new["image"]["image_id"] == image.image_id
        assert abs(new["image"]["size_gib"] * (1 << 30) - image.size_bytes) < 2048
        assert new["image"]["compressed_gib"] > 0
        assert new["image"]["publication"] == old["image"]["publication"]
        for table in ("lane", "launcher", "model", "serve", "env"):
            assert new.get(table) == old.get(table), table
        assert new["image"].get("versions") == old["image"].get("versions")
        Recipe.model_validate(new)


def test_gpu_parts_cover_the_interpreter_and_the_sources_without_usr() -> None:
    parts = gpu_parts()
    assert "/usr" not in parts
    assert all(any(root.startswith(p) for p in parts) for root in IMPORT_ROOTS)
    interpreter = Path(sys.executable).resolve()
    assert any(interpreter.is_relative_to(p) for p in parts), (interpreter, parts)
    assert len(parts) == len(set(parts))
    assert not any(a != b and b.startswith(a + "/") for a in parts for b in parts)
