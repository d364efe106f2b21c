"""What a simulated node says about itself, to any tool that asks: a GB10, its own name and ids.

Written at provisioning into `<node dir>/identity/` (most of it as `identity.tar`, unpacked by
the node's namespace holder into a tmpfs at `identity/ns/`) and shown to every session on the node
by its namespaces (`cockpit_sim.fleet.namespaces`): the files are bind-mounted over the machine's
own, so `cat`, `free`, `hostname`, a peer's script and the cockpit's probe read them where they
read them on a real node.

  hostname, machine-id, boot_id   /etc/hostname (and the UTS name), /etc/machine-id,
                                  /proc/sys/kernel/random/boot_id: distinct per node
  cpuinfo                         /proc/cpuinfo of a GB10: 10 Cortex-A725 (0xd87) + 10 Cortex-X925
                                  (0xd85) in two clusters of 5 + 5, as a DGX Spark lists them
  ../proc/meminfo                 /proc/meminfo (kept by the fleet daemon, `meminfo.py`)
  sys/class/{net,infiniband}      the management port and the ConnectX-7's netdevs and RDMA
                                  devices, each linked to its PCI function under sys/devices
  etc-ssh/                        /etc/ssh with the node's own host key (no other key)
  net.json, ibdev2netdev          (on disk) the interfaces as data, for `ip`, `ibdev2netdev` and
                                  the engine's NCCL log
  fstab, enter.sh                 (on disk) the mounts, and the script that makes them

What a namespace cannot change is answered by wrappers first on the node's PATH (`uname` says
aarch64, `lscpu`'s summary, `ibdev2netdev`, `ip`), written into the fleet's bin folder. The
machine's own cores stay visible where a real program needs them to run: `lscpu --extended` /
`--json`, `nproc`, /sys/devices/system/cpu (vLLM's CPU build binds its threads from them).

Port wiring: the CX7 devices the node's clusters name in their `[nccl]` block are ACTIVE with an
address (the switch fabric's f0 pair on every node, the f1 pair where a cluster uses it); the
others are present and DOWN. Every address is on loopback: the management port holds the node's
SSH address, the fabric twins the same host part on their own /24 (second octet shifted).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import secrets
import shlex
import shutil
import sys
import tarfile
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from cockpit_sim.fleet.meminfo import meminfo_path, stat_path
from cockpit_sim.tools.launchers import IMPORT_ROOTS
from cockpit_sim.tools.netinfo import render_ibdev2netdev

MGMT_IFNAME = "enP7s7"
MGMT_PCI = "0007:01:00.0"
SWITCH_PAIR = ("rocep1s0f0", "roceP2p1s0f0")
"""The port every node has cabled: the fleet's 200G switch fabric (f0)."""


@dataclass(frozen=True)
class Cx7Function:
    """One PCIe function of the ConnectX-7: an RDMA device and the netdev behind it."""

    hca: str
    netdev: str
    pci: str
    port: str  # phys_port_name: the twins of one 200G port share it


CX7 = (
    Cx7Function("rocep1s0f0", "enp1s0f0np0", "0000:01:00.0", "p0"),
    Cx7Function("roceP2p1s0f0", "enP2p1s0f0np0", "0002:01:00.0", "p0"),
    Cx7Function("rocep1s0f1", "enp1s0f1np1", "0000:01:00.1", "p1"),
    Cx7Function("roceP2p1s0f1", "enP2p1s0f1np1", "0002:01:00.1", "p1"),
)
CX7_RATE = "200 Gb/sec (4X HDR)"
CX7_SPEED_MBPS = 200_000

GB10_FEATURES = (
    "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma "
    "lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm sb paca pacg "
    "dcpodp sve2 sveaes svepmull svebitperm svesha3 svesm4 flagm2 frint svei8mm svebf16 i8mm bf16 "
    "dgh bti ecv afp wfxt"
)
A725, X925 = "0xd87", "0xd85"
GB10_PARTS = [A725] * 5 + [X925] * 5 + [A725] * 5 + [X925] * 5
"""CPU 0-4 A725, 5-9 X925, 10-14 A725, 15-19 X925: two clusters of five efficiency and five
performance cores (NVIDIA's DGX Spark porting guide; the part order as DGX Spark owners list it)."""


def cpuinfo() -> str:
    """/proc/cpuinfo of a GB10, in arm64 Linux's format (no "model name": MIDR parts only)."""
    return "".join(
        f"processor\t: {n}\nBogoMIPS\t: 2000.00\nFeatures\t: {GB10_FEATURES}\n"
        f"CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\n"
        f"CPU part\t: {part}\nCPU revision\t: 1\n\n"
        for n, part in enumerate(GB10_PARTS)
    )


def lscpu() -> str:
    """util-linux lscpu's summary of a GB10 (what `lscpu` prints when not on a terminal)."""
    rows = [
        ("Architecture", "aarch64"),
        ("CPU op-mode(s)", "64-bit"),
        ("Byte Order", "Little Endian"),
        ("CPU(s)", "20"),
        ("On-line CPU(s) list", "0-19"),
        ("Vendor ID", "ARM"),
    ]
    for name in ("Cortex-X925", "Cortex-A725"):
        rows += [
            ("Model name", name),
            ("Model", "1"),
            ("Thread(s) per core", "1"),
            ("Core(s) per socket", "10"),
            ("Socket(s)", "1"),
            ("Stepping", "r0p1"),
            ("BogoMIPS", "2000.00"),
            ("Flags", GB10_FEATURES),
        ]
    rows += [("NUMA node(s)", "1"), ("NUMA node0 CPU(s)", "0-19")]
    return "".join(f"{key + ':':<38}{value}\n" for key, value in rows)


def fabric_address(node_addr: str, index: int) -> str:
    """The address of CX7 twin `index` on the node: its host part on a /24 of its own."""
    first, second, third, fourth = (int(o) for o in node_addr.split("."))
    return f"{first}.{(second + index) % 254 + 1}.{third}.{fourth}"


def active_hcas(clusters: Mapping[str, Mapping[str, object]], node: str) -> set[str]:
    """The RDMA devices of `node` that are cabled: the switch pair and what its clusters name."""
    named = set(SWITCH_PAIR)
    for cluster in clusters.values():
        if node in cluster.get("nodes", []):  # type: ignore[operator]
            nccl = cluster.get("nccl", {})
            named.update(nccl.get("hcas", []))  # type: ignore[union-attr]
    return named


def _mac(seed: str, name: str) -> str:
    digest = hashlib.sha256(f"{seed}:{name}".encode()).digest()
    return "02:" + ":".join(f"{b:02x}" for b in digest[:5])


def _guid(seed: str, name: str) -> str:
    h = hashlib.sha256(f"guid:{seed}:{name}".encode()).hexdigest()
    return ":".join(h[i : i + 4] for i in range(0, 16, 4))


def _link_local_gid(mac: str) -> str:
    octets = [int(o, 16) for o in mac.split(":")]
    eui = [octets[0] ^ 0x02, *octets[1:3], 0xFF, 0xFE, *octets[3:]]
    words = [f"{eui[i]:02x}{eui[i + 1]:02x}" for i in range(0, 8, 2)]
    return "fe80:0000:0000:0000:" + ":".join(words)


def _mapped_gid(address: str) -> str:
    octets = [int(o) for o in address.split(".")]
    return (
        "0000:0000:0000:0000:0000:ffff:"
        + f"{octets[0]:02x}{octets[1]:02x}:"
        + (f"{octets[2]:02x}{octets[3]:02x}")
    )


def interfaces(
    node_addr: str, hcas: Iterable[str], active: set[str], seed: str
) -> list[dict[str, object]]:
    """The node's interfaces (net.json): lo, the management port, the CX7 twins it has."""
    prefix = node_addr.rsplit(".", 1)[0]
    out: list[dict[str, object]] = [
        {"name": "lo", "index": 1, "kind": "loopback", "mac": "00:00:00:00:00:00",
         "mtu": 65536, "up": True,
         "addrs": [{"local": "127.0.0.1", "prefixlen": 8, "scope": "host"}]},
        {"name": MGMT_IFNAME, "index": 2, "kind": "ether", "mac": _mac(seed, MGMT_IFNAME),
         "mtu": 1500, "up": True, "pci": MGMT_PCI, "speed": 10_000, "gateway": f"{prefix}.1",
         "addrs": [{"local": node_addr, "prefixlen": 24, "scope": "global"}]},
    ]  # fmt: skip
    present = set(hcas)
    for index, fn in enumerate(CX7):
        if fn.hca not in present:
            continue
        up = fn.hca in active
        addrs = [{"local": fabric_address(node_addr, index), "prefixlen": 24, "scope": "global"}]
        out.append(
            {"name": fn.netdev, "index": len(out) + 1, "kind": "ether",
             "mac": _mac(seed, fn.netdev), "mtu": 9000 if up else 1500, "up": up, "pci": fn.pci,
             "speed": CX7_SPEED_MBPS, "hca": fn.hca, "port": fn.port,
             "addrs": addrs if up else []}
        )  # fmt: skip
    return out


class Tree:
    """A folder tree built in memory and written as one tar (one file on disk per node: creating
    the ~150 small files of a node's sysfs and /etc on a journaled disk costs ~70 ms a node; the
    holder unpacks the tar into a tmpfs of the node's namespace instead)."""

    def __init__(self) -> None:
        self._entries: list[tuple[tarfile.TarInfo, bytes | None]] = []
        self._dirs: set[str] = {""}

    def _parents(self, path: str) -> None:
        parent = path.rpartition("/")[0]
        if parent not in self._dirs:
            self._parents(parent)
            self._dirs.add(parent)
            info = tarfile.TarInfo(parent)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            self._entries.append((info, None))

    def file(self, path: str, text: str, mode: int = 0o644) -> None:
        self._parents(path)
        data = text.encode()
        info = tarfile.TarInfo(path)
        info.size, info.mode = len(data), mode
        self._entries.append((info, data))

    def link(self, path: str, target: str) -> None:
        self._parents(path)
        info = tarfile.TarInfo(path)
        info.type, info.linkname = tarfile.SYMTYPE, target
        self._entries.append((info, None))

    def tar(self) -> bytes:
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as archive:
            for info, data in self._entries:
                archive.addfile(info, io.BytesIO(data) if data is not None else None)
        return out.getvalue()


def _sysfs(tree: Tree, mounted: Path, ifaces: list[dict[str, object]], seed: str) -> None:
    """sys/devices/<pci>/{net/<if>, infiniband/<hca>} and the class folders linking to them
    (absolute links: `mounted` is where the tree is unpacked inside the node's namespace)."""
    tree.link("sys/class/net/lo", "/sys/devices/virtual/net/lo")
    image_guid = _guid(seed, "system-image")
    for iface in ifaces:
        if iface["kind"] == "loopback":
            continue
        name, up = str(iface["name"]), bool(iface["up"])
        net = f"sys/devices/{iface['pci']}/net/{name}"
        values = {
            "address": iface["mac"], "mtu": iface["mtu"], "operstate": "up" if up else "down",
            "carrier": int(up), "speed": iface["speed"] if up else -1, "type": 1,
            "ifindex": iface["index"],
        }  # fmt: skip
        if "port" in iface:
            values["phys_port_name"] = iface["port"]
        for key, value in values.items():
            tree.file(f"{net}/{key}", f"{value}\n")
        tree.link(f"{net}/device", "../..")
        tree.link(f"sys/class/net/{name}", str(mounted / net))
        if "hca" not in iface:
            continue
        hca = f"sys/devices/{iface['pci']}/infiniband/{iface['hca']}"
        port = f"{hca}/ports/1"
        tree.file(f"{port}/state", "4: ACTIVE\n" if up else "1: DOWN\n")
        tree.file(f"{port}/phys_state", "5: LinkUp\n" if up else "3: Disabled\n")
        tree.file(f"{port}/rate", f"{CX7_RATE}\n")
        tree.file(f"{port}/link_layer", "Ethernet\n")
        gids = [_link_local_gid(str(iface["mac"]))] * 2
        gids += [_mapped_gid(str(a["local"])) for a in iface["addrs"] for _ in (0, 1)]  # type: ignore[attr-defined]
        for index, gid in enumerate(gids):
            tree.file(f"{port}/gids/{index}", f"{gid}\n")
            kind = "RoCE v2" if index % 2 else "IB/RoCE v1"
            tree.file(f"{port}/gid_attrs/types/{index}", f"{kind}\n")
            tree.file(f"{port}/gid_attrs/ndevs/{index}", f"{name}\n")
        tree.file(f"{hca}/node_type", "1: CA\n")
        tree.file(f"{hca}/hca_type", "MT4129\n")
        tree.file(f"{hca}/node_guid", _guid(seed, str(iface["hca"])) + "\n")
        tree.file(f"{hca}/sys_image_guid", image_guid + "\n")
        tree.link(f"{hca}/device", "../..")
        tree.link(f"sys/class/infiniband/{iface['hca']}", str(mounted / hca))


def _etc_ssh(tree: Tree, host_public_key: Path) -> None:
    """The machine's /etc/ssh (client and server configs) with this node's host key only."""
    source = Path("/etc/ssh")
    for path in sorted(source.rglob("*")) if source.is_dir() else []:
        if path.is_file() and not path.name.startswith("ssh_host_") and path.name != "moduli":
            tree.file(f"etc-ssh/{path.relative_to(source)}", path.read_text(), 0o644)
    tree.file("etc-ssh/ssh_host_ed25519_key.pub", host_public_key.read_text())


def identity_dir(node_dir: Path) -> Path:
    return node_dir / "identity"


def mounted_dir(node_dir: Path) -> Path:
    """Where the node's tree is unpacked (a tmpfs seen only inside the node's namespace)."""
    return identity_dir(node_dir) / "ns"


def write_identity(
    node_dir: Path,
    name: str,
    node_addr: str,
    hcas: Iterable[str],
    active: set[str],
    host_public_key: Path,
) -> None:
    """Create the node's identity (fresh ids every provisioning, as a new machine): on disk what
    tools read in every mode (net.json, ibdev2netdev) and the holder's files; the rest in
    identity.tar."""
    root = identity_dir(node_dir)
    shutil.rmtree(root, ignore_errors=True)
    mounted_dir(node_dir).mkdir(parents=True)
    machine_id = secrets.token_hex(16)
    ifaces = interfaces(node_addr, hcas, active, machine_id)
    (root / "net.json").write_text(json.dumps({"interfaces": ifaces}, indent=1))
    (root / "ibdev2netdev").write_text(render_ibdev2netdev(ifaces))
    tree = Tree()
    tree.file("hostname", f"{name}\n")
    tree.file("machine-id", f"{machine_id}\n", 0o444)
    tree.file("boot_id", f"{uuid.uuid4()}\n", 0o444)
    tree.file("cpuinfo", cpuinfo(), 0o444)
    _sysfs(tree, mounted_dir(node_dir), ifaces, machine_id)
    _etc_ssh(tree, host_public_key)
    (root / "identity.tar").write_bytes(tree.tar())
    (root / "fstab").write_text(mounts(node_dir))
    (root / "enter.sh").write_text(enter_script(node_dir, name))


def mounts(node_dir: Path) -> str:
    """The fstab of the node's mount namespace: every file of the identity over the machine's
    own, in order (the sysfs overlay adds `infiniband/` to /sys/class, then the node's `net/`
    hides the machine's interfaces); a file the machine lacks is not mounted over."""
    root = mounted_dir(node_dir)
    sysclass = _overlay_path(root / "sys" / "class")
    entries = [
        (str(meminfo_path(node_dir)), "/proc/meminfo", "none", "bind"),
        (str(stat_path(node_dir)), "/proc/stat", "none", "bind"),
        (str(root / "cpuinfo"), "/proc/cpuinfo", "none", "bind"),
        (str(root / "boot_id"), "/proc/sys/kernel/random/boot_id", "none", "bind"),
        (str(root / "machine-id"), "/etc/machine-id", "none", "bind"),
        (str(root / "hostname"), "/etc/hostname", "none", "bind"),
        ("cockpit-sim-sysfs", "/sys/class", "overlay", f"lowerdir={sysclass}:/sys/class"),
        (str(root / "sys" / "class" / "net"), "/sys/class/net", "none", "bind"),
        (str(root / "etc-ssh"), "/etc/ssh", "none", "bind"),
    ]
    kept = [e for e in entries if os.path.exists(e[1])]  # a machine without /etc/machine-id…
    return "".join(" ".join(map(_fstab_field, entry)) + " 0 0\n" for entry in kept)


def enter_script(node_dir: Path, name: str) -> str:
    """What a node's namespace holder runs inside its fresh mount and UTS namespaces: the tree
    unpacked into a tmpfs, the mounts of `identity/fstab` (one `mount` for all), the node's name,
    "ready" on stdout, then it holds them. Few programs: a holder per node starts with the
    fleet."""
    root, q = identity_dir(node_dir), shlex.quote
    mounted = q(str(mounted_dir(node_dir)))
    return (
        "set -e\n"
        f"mount -t tmpfs -o mode=0755,size=4m cockpit-sim-identity {mounted}\n"
        f"tar -xf {q(str(root / 'identity.tar'))} -C {mounted}\n"
        f"mount --all --fstab {q(str(root / 'fstab'))}\n"
        f"hostname {shlex.quote(name)}\n"
        "echo ready\n"
        "exec sleep infinity\n"
    )


def _fstab_field(text: str) -> str:
    """A field of fstab(5): blanks and backslashes octal-escaped."""
    for char in ("\\", " ", "\t", "\n"):
        text = text.replace(char, f"\\{ord(char):03o}")
    return text


def _overlay_path(path: Path) -> str:
    """A path as overlayfs' lowerdir option needs it (`:`, `,` and `\\` escaped)."""
    text = str(path)
    for char in ("\\", ":", ","):
        text = text.replace(char, "\\" + char)
    return text


LAUNCHER = """#!{python} -S
import sys
sys.path[:0] = {roots!r}
from cockpit_sim.tools.netinfo import main
sys.exit(main())
"""
UNAME = """#!/bin/bash
# uname on a simulated GB10: the kernel is the machine's, the architecture the node's (aarch64)
out=$({real} "$@") || exit
printf '%s\\n' "${{out//x86_64/aarch64}}"
"""
LSCPU = """#!/bin/bash
# lscpu of a simulated GB10: its summary; other forms (--extended, --json, --parse) are the
# machine's, whose cores a real program on the node (the real-vLLM lane's engine) runs on
if [ $# -gt 0 ]; then exec {real} "$@"; fi
cat <<'EOF'
{text}EOF
"""
IBDEV2NETDEV = """#!/bin/bash
# ibdev2netdev of a simulated node: its RDMA devices and their netdevs
exec cat "$COCKPIT_SIM_NODE_DIR/identity/ibdev2netdev"
"""


def write_identity_tools(bin_dir: Path) -> None:
    """`uname`, `lscpu`, `ibdev2netdev` and `ip` for every node's PATH."""
    real_uname = shutil.which("uname", path=os.defpath) or "/usr/bin/uname"
    real_lscpu = shutil.which("lscpu", path=os.defpath) or "/usr/bin/lscpu"
    scripts = {
        "uname": UNAME.format(real=shlex.quote(real_uname)),
        "lscpu": LSCPU.format(real=shlex.quote(real_lscpu), text=lscpu()),
        "ibdev2netdev": IBDEV2NETDEV,
        "ip": LAUNCHER.format(python=sys.executable, roots=list(IMPORT_ROOTS)),
    }
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, text in scripts.items():
        path = bin_dir / name
        path.write_text(text)
        path.chmod(0o755)
