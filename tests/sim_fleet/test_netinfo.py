"""A simulated node's network data and the `ip` that prints it (pure: no fleet)."""

from __future__ import annotations

import json

import pytest

from cockpit_sim.fleet.identity import (
    CX7,
    active_hcas,
    cpuinfo,
    fabric_address,
    interfaces,
    lscpu,
)
from cockpit_sim.tools.netinfo import UsageError, render_ibdev2netdev, run

NODE = "127.40.7.13"
ALL = [f.hca for f in CX7]
CLUSTERS = {
    "4nodes-switch": {"nodes": ["dgx1", "dgx2", "dgx3"], "nccl": {"hcas": ALL[:2]}},
    "2nodes-dac": {"nodes": ["dgx1", "dgx2"], "nccl": {"hcas": ALL[2:]}},
}


def ifaces(active: set[str] | None = None) -> list[dict]:
    return interfaces(NODE, ALL, active if active is not None else set(ALL[:2]), "seed")  # type: ignore[return-value]


def test_a_node_is_cabled_where_its_clusters_say() -> None:
    assert active_hcas(CLUSTERS, "dgx1") == set(ALL)
    assert active_hcas(CLUSTERS, "dgx3") == set(ALL[:2])
    assert active_hcas({}, "dgx9") == {"rocep1s0f0", "roceP2p1s0f0"}, "the switch pair"


def test_addresses_are_loopback_and_distinct_per_twin() -> None:
    addrs = [fabric_address(NODE, i) for i in range(4)]
    assert addrs == ["127.41.7.13", "127.42.7.13", "127.43.7.13", "127.44.7.13"]
    assert fabric_address("127.254.0.11", 0) == "127.1.0.11"
    assert all(a.startswith("127.") and a != NODE for a in addrs)


def test_ip_addr_forms() -> None:
    net = ifaces()
    oneline = run(net, ["-o", "-4", "addr"])
    assert oneline.splitlines()[1] == (
        "2: enP7s7    inet 127.40.7.13/24 brd 127.40.7.255 scope global enP7s7\\"
        "       valid_lft forever preferred_lft forever"
    )
    assert "enp1s0f1np1" not in oneline, "a port that is down has no address"
    show = run(net, ["-4", "addr", "show", "enp1s0f0np0"])
    assert show.splitlines()[0].startswith("3: enp1s0f0np0: <BROADCAST,MULTICAST,UP,LOWER_UP>")
    assert "    inet 127.41.7.13/24 brd 127.41.7.255 scope global enp1s0f0np0" in show
    assert "link/ether" not in show
    down = run(net, ["addr", "show", "dev", "enp1s0f1np1"])
    assert "<NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 1500 qdisc mq state DOWN" in down
    assert "link/ether 02:" in down and "inet " not in down
    assert run(net, ["-br", "a"]).splitlines()[1].split() == ["enP7s7", "UP", f"{NODE}/24"]
    data = json.loads(run(net, ["-j", "address", "show"]))
    assert [d["ifname"] for d in data][:3] == ["lo", "enP7s7", "enp1s0f0np0"]
    assert data[1]["addr_info"][0]["local"] == NODE and data[1]["operstate"] == "UP"
    scoped = run(net, ["-4", "-o", "addr", "show", "dev", "lo", "scope", "global"])
    assert scoped == ""


def test_ip_route_and_route_get() -> None:
    net = ifaces()
    routes = run(net, ["-4", "route"]).splitlines()
    assert routes[0] == "default via 127.40.7.1 dev enP7s7 proto static "
    assert "127.41.7.0/24 dev enp1s0f0np0 proto kernel scope link src 127.41.7.13 " in routes
    got = run(net, ["route", "get", "8.8.8.8"])
    assert got.startswith("8.8.8.8 via 127.40.7.1 dev enP7s7 src 127.40.7.13 uid ")
    assert run(net, ["route", "get", "127.41.7.20"]).startswith(
        "127.41.7.20 dev enp1s0f0np0 src 127.41.7.13"
    )


@pytest.mark.parametrize(
    ("args", "status"),
    [
        (["addr", "add", "10.0.0.1/24", "dev", "enP7s7"], 2),
        (["link", "set", "enP7s7", "down"], 2),
        (["neigh"], 255),
        (["-x", "addr"], 255),
        (["addr", "show", "eth0"], 1),
    ],
)
def test_ip_refuses_what_the_node_does_not_model(args: list[str], status: int) -> None:
    with pytest.raises(UsageError) as refused:
        run(ifaces(), args)
    assert refused.value.status == status


def test_ibdev2netdev_names_each_device_and_its_state() -> None:
    assert render_ibdev2netdev(ifaces()).splitlines() == [
        "rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)",
        "roceP2p1s0f0 port 1 ==> enP2p1s0f0np0 (Up)",
        "rocep1s0f1 port 1 ==> enp1s0f1np1 (Down)",
        "roceP2p1s0f1 port 1 ==> enP2p1s0f1np1 (Down)",
    ]


def test_a_gb10_cpu() -> None:
    parts = [line.split(": ")[1] for line in cpuinfo().splitlines() if line.startswith("CPU part")]
    assert len(parts) == 20 and parts.count("0xd85") == 10 and parts.count("0xd87") == 10
    assert "model name" not in cpuinfo()
    summary = dict(line.split(":", 1) for line in lscpu().splitlines())
    assert summary["Architecture"].strip() == "aarch64" and summary["CPU(s)"].strip() == "20"
    assert lscpu().count("Core(s) per socket:                   10") == 2
