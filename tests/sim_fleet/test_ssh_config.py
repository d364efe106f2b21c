"""The fleet folder's ssh_config: Debian's OpenSSH client reaches a node by its name, host key
checked, as `ssh dgx3` does on a real fleet."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cockpit_sim.fleet import SimFleet

FLEETS = [
    pytest.param("sim_fleet", id="asyncssh"),
    pytest.param("sshd_fleet", id="openssh", marks=pytest.mark.sshd),
]


def ssh(config: Path, *words: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/usr/bin/ssh", "-F", str(config), "-o", "BatchMode=yes", *words],
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("fleet_name", FLEETS)
def test_ssh_dgx3_by_name(fleet_name: str, request: pytest.FixtureRequest) -> None:
    fleet: SimFleet = request.getfixturevalue(fleet_name)
    done = ssh(fleet.ssh_config, "dgx3", "hostname")
    assert (done.returncode, done.stdout) == (0, "dgx3\n"), done.stderr
    text = fleet.ssh_config.read_text()
    assert text.count("\nHost dgx") == len(fleet.names)
    assert "StrictHostKeyChecking yes" in text and str(fleet.known_hosts) in text


def test_a_node_whose_key_is_unknown_is_refused(sim_fleet: SimFleet, tmp_path: Path) -> None:
    config = tmp_path / "ssh_config"
    empty = tmp_path / "known_hosts"
    empty.touch()
    config.write_text(
        sim_fleet.ssh_config.read_text().replace(str(sim_fleet.known_hosts), str(empty))
    )
    done = ssh(config, "dgx2", "hostname")
    assert done.returncode == 255 and "Host key verification failed" in done.stderr
