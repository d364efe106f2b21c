"""The real Docker parts under a fleet: a daemon and a registry start, work and leave nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cockpit_sim.fleet.realdocker import (
    Dockerd,
    RealDockerError,
    Registry,
    import_busybox,
    missing_parts,
    write_hook,
)

pytestmark = pytest.mark.realdocker


@pytest.fixture
def daemon(tmp_path: Path):
    if missing_parts():
        pytest.fail(f"real Docker parts missing: {missing_parts()} (.ci/run installs them)")
    dockerd = Dockerd(tmp_path / "node", extra_path=(write_hook(tmp_path / "bin").parent,))
    dockerd.start()
    yield dockerd
    dockerd.stop()


def test_daemon_runs_gpu_containers_and_registry_serves_by_digest(
    daemon: Dockerd, tmp_path: Path
) -> None:
    image_id = import_busybox(daemon, "base:1", tmp_path, labels={"org.example": "x"})
    assert image_id.startswith("sha256:")
    # --gpus all is what the cockpit renders: the stand-in hook lets the daemon accept it
    out = daemon.docker(
        "run", "--rm", "--gpus", "all", "--ipc", "host", "--network", "host", "base:1",
        "sh", "-c", "echo in-container",
    )  # fmt: skip
    assert out.strip() == "in-container"
    registry = Registry(tmp_path / "registry")
    registry.start()
    try:
        ref = f"{registry.address}/base:1"
        daemon.docker("tag", "base:1", ref)
        pushed = daemon.docker("push", ref)
        assert "digest: sha256:" in pushed
        info = json.loads(daemon.docker("image", "inspect", ref))[0]
        assert info["Id"] == image_id
        assert info["RepoDigests"][0].startswith(f"{registry.address}/base@sha256:")
    finally:
        registry.stop()
    assert not registry.running()


def test_stop_leaves_no_process_and_no_socket(tmp_path: Path) -> None:
    if missing_parts():
        pytest.fail(f"real Docker parts missing: {missing_parts()}")
    daemon = Dockerd(tmp_path / "node")
    daemon.start()
    import_busybox(daemon, "base:1", tmp_path)
    daemon.docker("run", "-d", "--network", "host", "--name", "sleeper", "base:1", "sleep", "300")
    pid, run_dir = daemon.pid, daemon.run_dir
    assert pid is not None and daemon.running()
    daemon.stop()
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()
    assert not run_dir.exists()
    assert not (tmp_path / "node" / "root").exists()
    mounts = Path("/proc/self/mounts").read_text()
    assert str(tmp_path) not in mounts
    with pytest.raises(RealDockerError):
        daemon.docker("ps")
    assert os.environ.get("DOCKER_HOST") != daemon.host
