"""What two peers see of a simulated fleet: the exact command lines sparkrun 0.4.2 (host monitor,
--infer-hardware, setup check's hardware, memory, RDMA, CX7 and identity lines) and vllmstat
0.9.1 run on a node (tests/fixtures/peers/node_commands.toml), replayed over SSH on each node.

They must report one GB10 per node with ~119.7 GiB of memory, aarch64 with its 10 + 10 cores, a
distinct identity per node (hostname, machine-id, boot id, host key) and the CX7 devices its
clusters wire, with the addresses their netdevs hold.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from cockpit.plan.memory_fit import GB10_MEMORY_GIB
from cockpit_sim.fleet import SimFleet
from tests.fleet_fixtures import connect

COMMANDS = tomllib.loads(
    (Path(__file__).parents[1] / "fixtures" / "peers" / "node_commands.toml").read_text()
)
FLEETS = [
    pytest.param("sim_fleet", id="asyncssh"),
    pytest.param("sshd_fleet", id="openssh", marks=pytest.mark.sshd),
]
GB10_KIB = int(GB10_MEMORY_GIB * 1024 * 1024)
SWITCH = {"rocep1s0f0": "enp1s0f0np0", "roceP2p1s0f0": "enP2p1s0f0np0"}
DAC = {"rocep1s0f1": "enp1s0f1np1", "roceP2p1s0f1": "enP2p1s0f1np1"}


async def replay(fleet: SimFleet, node: str) -> dict[str, str]:
    async with connect(fleet, node) as conn:
        outputs = {}
        for key, command in COMMANDS.items():
            done = await conn.run(command["line"], check=False)
            assert done.exit_status == 0, (key, done.stderr)
            outputs[key] = str(done.stdout).strip()
        return outputs


@pytest.fixture(params=FLEETS)
def fleet(request: pytest.FixtureRequest) -> SimFleet:
    return request.getfixturevalue(request.param)


async def test_peers_see_a_gb10_of_its_own_on_every_node(fleet: SimFleet) -> None:
    nodes = fleet.names[:3]
    seen = {node: await replay(fleet, node) for node in nodes}
    for node, out in seen.items():
        # hardware (host monitor, --infer-hardware, vllmstat)
        assert out["monitor_gpu_count"] == "1", "one GPU, not the lines of a table"
        assert out["monitor_gpu"].split("|")[0] == "NVIDIA GB10"
        assert out["probe_gpus"] == "NVIDIA GB10, [N/A]" and out["probe_compute_cap"] == "12.1"
        assert out["probe_driver"] == "580.95.05"
        assert (out["probe_os"], out["probe_arch"]) == ("Linux", "aarch64")
        assert out["monitor_cpu_model_name"] == ""
        assert out["monitor_cpu_parts"] == "X925 (10) + A725 (10)"
        vllmstat = out["vllmstat_gpu"].split(", ")
        assert len(vllmstat) == 11 and vllmstat[:2] == ["0", "NVIDIA GB10"]
        assert vllmstat[3:5] == ["[N/A]", "[N/A]"], "unified memory: from the OS, not the GPU"
        # memory
        assert out["probe_host_mem"] == str(GB10_KIB)
        total_mb, used_mb, avail_mb = (int(v) for v in out["monitor_mem"].split()[:3])
        assert total_mb == GB10_KIB // 1024 and used_mb + avail_mb in (total_mb, total_mb - 1)
        # identity
        assert out["monitor_hostname"] == node
        # RDMA / CX7: the switch pair on every node, the DAC pair where 2nodes-dac wires it
        wired = {**SWITCH, **DAC} if node in ("dgx1", "dgx2") else SWITCH
        assert out["probe_ib_present"] == "1"
        active = {
            line.split()[0]: line.split()[1:] for line in out["probe_ib_devices"].splitlines()
        }
        assert set(active) == set(wired)
        for hca, (gid, netdev, address) in active.items():
            assert (gid, netdev) == ("3", wired[hca]) and address.startswith("127.")
        assert out["mgmt_iface"].splitlines()[0] == "enP7s7"
        host = next(n.host for n in fleet.nodes if n.name == node)
        assert out["mgmt_iface"].splitlines()[1] == host, "the address the cockpit reaches"
        rdma = dict(line.split("=", 1) for line in out["rdma_devices"].splitlines())
        assert rdma["RDMA_DEV_COUNT"] == "4"
        devices = [
            {k.split("_", 3)[3]: v for k, v in rdma.items() if k.startswith(f"RDMA_DEV_{i}_")}
            for i in range(4)
        ]
        for device in devices:
            up = device["NAME"] in wired
            assert device["STATE"] == ("4: ACTIVE" if up else "1: DOWN")
            assert device["RATE"] == "200 Gb/sec (4X HDR)" and device["LINK_LAYER"] == "Ethernet"
            assert device["PHYS_PORT_NAME"] == ("p0" if device["NAME"] in SWITCH else "p1")
        assert len({d["SYS_IMAGE_GUID"] for d in devices}) == 1, "one adapter"
        cx7 = [line.split() for line in out["cx7_interfaces"].splitlines()]
        assert {c[0] for c in cx7} == set(wired.values())
        assert all(c[1:3] == ["up", "9000"] and c[3].endswith("/24") for c in cx7)
        addresses = [
            a["local"] for i in json.loads(out["identity_addresses"]) for a in i["addr_info"]
        ]
        assert host in addresses and "127.0.0.1" in addresses
    for key in ("monitor_hostname", "identity_machine_id", "identity_boot_id",
                "identity_host_keys"):  # fmt: skip
        values = [seen[node][key] for node in nodes]
        assert len(set(values)) == len(nodes), f"{key} is the same on two nodes: {values}"
    keys = [seen[node]["identity_host_keys"] for node in nodes]
    assert all(len(k.splitlines()) == 1 for k in keys), "each node has its own host key only"
