"""The pool parses known_hosts once per version of the file, not once per connection (asyncssh
alone re-reads the whole file for every node: quadratic in the fleet's size)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import asyncssh
import pytest

from cockpit.ssh import HostKeyRejected, Settings, SshPool
from cockpit_sim.fleet import SimFleet
from tests.ssh.test_fleet_backend import endpoints


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = asyncssh.read_known_hosts

    def counting(path: Any) -> asyncssh.SSHKnownHosts:
        seen.append(str(path))
        return real(path)

    monkeypatch.setattr(asyncssh, "read_known_hosts", counting)
    return seen


async def test_one_parse_for_the_whole_fleet(sim_fleet: SimFleet, reads: list[str]) -> None:
    settings = Settings(sim_fleet.known_hosts, (sim_fleet.client_key,), 5.0)
    async with SshPool(endpoints(sim_fleet), settings) as pool:
        results = await pool.run_all(pool.nodes, "true")
    assert all(getattr(r, "ok", False) for r in results.values()), results
    assert reads == [str(sim_fleet.known_hosts)]


async def test_a_changed_file_is_read_again(
    sim_fleet: SimFleet, reads: list[str], tmp_path: Path
) -> None:
    known = tmp_path / "known_hosts"
    lines = sim_fleet.known_hosts.read_text().splitlines()
    known.write_text("\n".join(lines) + "\n")
    settings = Settings(known, (sim_fleet.client_key,), 5.0)
    async with SshPool(endpoints(sim_fleet)[:2], settings) as pool:
        assert (await pool.run("dgx1", "true")).ok
        host2 = sim_fleet.nodes[1].host
        dgx1_key = lines[0].split(" ", 1)[1]
        forged = [
            f"{line.split(' ', 1)[0]} {dgx1_key}" if host2 in line else line for line in lines
        ]
        known.write_text("\n".join(forged) + "\n")
        stat = known.stat()
        os.utime(known, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
        with pytest.raises(HostKeyRejected):
            await pool.run("dgx2", "true")
    assert reads.count(str(known)) == 3  # one per version, one to explain the refusal
