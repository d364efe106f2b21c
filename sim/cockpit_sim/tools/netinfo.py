"""A simulated node's network as its tools show it: the `ip` wrapper and the data it reads.

A GB10 has a management port (`enP7s7`, holding the node's SSH address) and a ConnectX-7 whose
two 200G ports each show up as two PCIe "twins" (`enp1s0f0np0` + `enP2p1s0f0np0` for port 0,
`…f1np1` for port 1), each twin an RDMA device (`rocep1s0f0`, `roceP2p1s0f0`, …). A network
namespace would need privileges and real links, so the node's interfaces are data
(`<node dir>/identity/net.json`, written at provisioning by `cockpit_sim.fleet.identity`) that
this `ip` prints in iproute2's formats (`addr`, `link`, `route`, `route get`; `-4 -6 -o -j -br`).
Changes (`ip addr add`, `ip link set`, …) are refused, never passed to the machine's own `ip`;
only `ip -V` is. The simulated NCCL log reads the same file for its bootstrap address
(`address_of`), so what NCCL claims is what `ip` shows.

Standard library only, imported by a tool started per call (`python -S`).
"""

from __future__ import annotations

import json
import os
import sys

FOREVER = 4294967295


def load(node_dir: str) -> list[dict]:
    """The node's interfaces in ifindex order ([] when the node has no identity data)."""
    try:
        with open(os.path.join(node_dir, "identity", "net.json")) as handle:
            return list(json.load(handle)["interfaces"])
    except (OSError, ValueError, KeyError):
        return []


def address_of(node_dir: str, ifname: str) -> str | None:
    """The first IPv4 address of `ifname` on the node, if it has one."""
    for iface in load(node_dir):
        if iface["name"] == ifname and iface["addrs"]:
            return str(iface["addrs"][0]["local"])
    return None


def _flags(iface: dict) -> list[str]:
    if iface["kind"] == "loopback":
        return ["LOOPBACK", "UP", "LOWER_UP"]
    if iface["up"]:
        return ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"]
    return ["NO-CARRIER", "BROADCAST", "MULTICAST", "UP"]


def _state(iface: dict) -> str:
    return "UNKNOWN" if iface["kind"] == "loopback" else ("UP" if iface["up"] else "DOWN")


def _qdisc(iface: dict) -> str:
    return "noqueue" if iface["kind"] == "loopback" else "mq"


def _link_type(iface: dict) -> str:
    return "loopback" if iface["kind"] == "loopback" else "ether"


def _brd_mac(iface: dict) -> str:
    return "00:00:00:00:00:00" if iface["kind"] == "loopback" else "ff:ff:ff:ff:ff:ff"


def _broadcast(addr: dict) -> str | None:
    if addr["scope"] == "host":
        return None
    octets = [int(o) for o in addr["local"].split(".")]
    value = int.from_bytes(bytes(octets), "big") | ((1 << (32 - addr["prefixlen"])) - 1)
    return ".".join(str(b) for b in value.to_bytes(4, "big"))


def _head(iface: dict, mode: bool) -> str:
    flags = ",".join(_flags(iface))
    line = f"{iface['index']}: {iface['name']}: <{flags}> mtu {iface['mtu']} qdisc {_qdisc(iface)}"
    line += f" state {_state(iface)}"
    return line + (" mode DEFAULT" if mode else "") + " group default qlen 1000"


def _link(iface: dict) -> str:
    return f"link/{_link_type(iface)} {iface['mac']} brd {_brd_mac(iface)}"


def _inet(iface: dict, addr: dict) -> str:
    brd = _broadcast(addr)
    text = f"inet {addr['local']}/{addr['prefixlen']}" + (f" brd {brd}" if brd else "")
    return text + f" scope {addr['scope']} {iface['name']}"


LIFETIME = "valid_lft forever preferred_lft forever"


def render_addr(ifaces: list[dict], opts: dict) -> str:
    """`ip addr show` in the text, one-line (-o), brief (-br) or JSON (-j) form."""
    family = opts.get("family")
    shown = [i for i in ifaces if family != "inet" or i["addrs"]] if family != "inet6" else []
    if opts.get("json"):
        return _json([_addr_json(i, family) for i in shown], opts)
    if opts.get("brief"):
        return "".join(
            f"{i['name']:<16} {_state(i):<14} "
            + "".join(f"{a['local']}/{a['prefixlen']} " for a in i["addrs"])
            + "\n"
            for i in shown
        )
    out = []
    for iface in shown:
        if opts.get("oneline"):
            pad = f"{iface['index']}: {iface['name']}    "
            out += [f"{pad}{_inet(iface, a)}\\       {LIFETIME}" for a in iface["addrs"]]
            continue
        out.append(_head(iface, False))
        if family != "inet":
            out.append("    " + _link(iface))
        for addr in iface["addrs"]:
            out += ["    " + _inet(iface, addr), "       " + LIFETIME]
    return "".join(line + "\n" for line in out)


def _link_json(iface: dict) -> dict:
    return {
        "ifindex": iface["index"],
        "ifname": iface["name"],
        "flags": _flags(iface),
        "mtu": iface["mtu"],
        "qdisc": _qdisc(iface),
        "operstate": _state(iface),
        "group": "default",
        "txqlen": 1000,
        "link_type": _link_type(iface),
        "address": iface["mac"],
        "broadcast": _brd_mac(iface),
    }


def _addr_json(iface: dict, family: str | None) -> dict:
    info = []
    for addr in iface["addrs"] if family != "inet6" else []:
        entry = {"family": "inet", "local": addr["local"], "prefixlen": addr["prefixlen"]}
        brd = _broadcast(addr)
        if brd:
            entry["broadcast"] = brd
        entry.update(scope=addr["scope"], label=iface["name"], valid_life_time=FOREVER,
                     preferred_life_time=FOREVER)  # fmt: skip
        info.append(entry)
    return {**_link_json(iface), "addr_info": info}


def render_link(ifaces: list[dict], opts: dict) -> str:
    if opts.get("json"):
        return _json([_link_json(i) for i in ifaces], opts)
    if opts.get("brief"):
        return "".join(
            f"{i['name']:<16} {_state(i):<14} {i['mac']} <{','.join(_flags(i))}> \n" for i in ifaces
        )
    sep = "\\    " if opts.get("oneline") else "\n    "
    return "".join(_head(i, True) + sep + _link(i) + "\n" for i in ifaces)


def _routes(ifaces: list[dict]) -> list[dict]:
    routes = []
    for iface in ifaces:
        gateway = iface.get("gateway")
        if gateway:
            routes.insert(0, {"dst": "default", "gateway": gateway, "dev": iface["name"],
                              "protocol": "static", "flags": []})  # fmt: skip
    for iface in ifaces:
        for addr in iface["addrs"]:
            if addr["scope"] != "global":
                continue
            net = _network(addr["local"], addr["prefixlen"])
            routes.append({"dst": f"{net}/{addr['prefixlen']}", "dev": iface["name"],
                           "protocol": "kernel", "scope": "link", "prefsrc": addr["local"],
                           "flags": []})  # fmt: skip
    return routes


def _network(local: str, prefixlen: int) -> str:
    value = int.from_bytes(bytes(int(o) for o in local.split(".")), "big")
    value &= ~((1 << (32 - prefixlen)) - 1) & 0xFFFFFFFF
    return ".".join(str(b) for b in value.to_bytes(4, "big"))


def render_route(ifaces: list[dict], opts: dict) -> str:
    routes = _routes(ifaces) if opts.get("family") != "inet6" else []
    if opts.get("json"):
        return _json(routes, opts)
    out = []
    for r in routes:
        if r["dst"] == "default":
            out.append(f"default via {r['gateway']} dev {r['dev']} proto static \n")
        else:
            out.append(f"{r['dst']} dev {r['dev']} proto kernel scope link src {r['prefsrc']} \n")
    return "".join(out)


def route_get(ifaces: list[dict], dest: str) -> str:
    """`ip route get DEST`: the connected subnet holding DEST, else the default route."""
    try:
        octets = [int(o) for o in dest.split(".")]
        if len(octets) != 4 or not all(0 <= o < 256 for o in octets):
            raise ValueError
    except ValueError:
        raise UsageError(f'Error: any valid prefix is expected rather than "{dest}".') from None
    routes = _routes(ifaces)
    uid = os.getuid()
    for r in routes:
        if r["dst"] != "default":
            net, prefixlen = r["dst"].split("/")
            if _network(dest, int(prefixlen)) == net:
                return f"{dest} dev {r['dev']} src {r['prefsrc']} uid {uid} \n    cache \n"
    default = next((r for r in routes if r["dst"] == "default"), None)
    if default is None:
        raise UsageError("RTNETLINK answers: Network is unreachable")
    src = next(r["prefsrc"] for r in routes if r["dev"] == default["dev"] and "prefsrc" in r)
    return (
        f"{dest} via {default['gateway']} dev {default['dev']} src {src} uid {uid} \n    cache \n"
    )


def _json(value: object, opts: dict) -> str:
    if opts.get("pretty"):
        return json.dumps(value, indent=4) + "\n"
    return json.dumps(value, separators=(",", ":")) + "\n"


def render_ibdev2netdev(ifaces: list[dict]) -> str:
    """`ibdev2netdev`: each RDMA device, its port and the netdev behind it."""
    return "".join(
        f"{i['hca']} port 1 ==> {i['name']} ({'Up' if i['up'] else 'Down'})\n"
        for i in ifaces
        if i.get("hca")
    )


class UsageError(Exception):
    """What iproute2 prints on stderr for a bad command (exit status 1 or 255)."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


OPTIONS = {
    "4": ("family", "inet"),
    "6": ("family", "inet6"),
    "0": ("family", "link"),
    "oneline": ("oneline", True),
    "json": ("json", True),
    "pretty": ("pretty", True),
    "brief": ("brief", True),
}
IGNORED = ("stats", "statistics", "details", "color", "human", "resolve", "numeric", "timestamp")
OBJECTS = {"address": "addr", "link": "link", "route": "route"}


def _matches(word: str, name: str, shortest: int = 1) -> bool:
    return len(word) >= shortest and name.startswith(word)


def parse(args: list[str]) -> tuple[dict, str | None, list[str]]:
    """(options, object, the object's arguments); object None: not one the node models."""
    opts: dict = {}
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        word = args[i].lstrip("-")
        if word == "br":
            word = "brief"
        if word in ("f", "family") and i + 1 < len(args):
            opts["family"] = {"inet": "inet", "inet6": "inet6"}.get(args[i + 1], args[i + 1])
            i += 2
            continue
        known = next((v for k, v in OPTIONS.items() if word and _matches(word, k)), None)
        if known is not None:
            opts[known[0]] = known[1]
        elif not any(word and _matches(word, k) for k in IGNORED):
            raise UsageError(f'Option "{args[i]}" is unknown, try "ip -help".', 255)
        i += 1
    if i >= len(args):
        raise UsageError("Usage: ip [ OPTIONS ] OBJECT { COMMAND | help }", 255)
    word = args[i]
    obj = next((v for k, v in OBJECTS.items() if _matches(word, k)), None)
    return opts, obj, args[i + 1 :]


def _select(ifaces: list[dict], rest: list[str]) -> list[dict]:
    """The interfaces `ip addr|link [show] [dev] NAME [scope S] [up]` asks for."""
    if rest and rest[0] in ("show", "list", "lst", "ls", "sh", "s", "l"):
        rest = rest[1:]
    name = scope = None
    up_only = False
    i = 0
    while i < len(rest):
        word = rest[i]
        if word in ("dev", "scope", "label", "to") and i + 1 < len(rest):
            if word == "dev":
                name = rest[i + 1]
            elif word == "scope":
                scope = rest[i + 1]
            i += 2
            continue
        if word == "up":
            up_only = True
        elif name is None:
            name = word
        i += 1
    chosen = ifaces
    if name is not None:
        chosen = [i for i in ifaces if i["name"] == name]
        if not chosen:
            raise UsageError(f'Device "{name}" does not exist.')
    if up_only:
        chosen = [i for i in chosen if i["up"]]
    if scope is not None:
        chosen = [{**i, "addrs": [a for a in i["addrs"] if a["scope"] == scope]} for i in chosen]
    return chosen


SHOW = ("show", "list", "lst", "ls", "sh", "s", "l")


def run(ifaces: list[dict], args: list[str]) -> str:
    """The output of `ip ARGS` on the node."""
    opts, obj, rest = parse(args)
    if obj is None:
        word = next((a for a in args if not a.startswith("-")), "")
        raise UsageError(f'Object "{word}" is unknown, try "ip help".', 255)
    if obj == "route" and rest[:1] == ["get"]:
        if len(rest) < 2:
            raise UsageError("Error: need at least a destination address", 255)
        return route_get(ifaces, rest[1])
    names = {i["name"] for i in ifaces}
    if rest and rest[0] not in SHOW and rest[0] not in ("dev", "up", *names):
        raise UsageError("RTNETLINK answers: Operation not permitted", 2)
    if obj == "route":
        return render_route(ifaces, opts)
    selected = _select(ifaces, rest)
    if obj == "link" or opts.get("family") == "link":
        return render_link(selected, opts)
    return render_addr(selected, opts)


def _machine_ip(args: list[str]) -> int:
    """`ip -V` from the machine's own `ip` (the first one on PATH that is not this one)."""
    here = os.path.dirname(os.path.abspath(sys.argv[0]))
    for folder in [*os.environ.get("PATH", "").split(os.pathsep), "/usr/sbin", "/sbin"]:
        candidate = os.path.join(folder, "ip")
        if folder and os.path.abspath(folder) != here and os.access(candidate, os.X_OK):
            os.execv(candidate, [candidate, *args])
    sys.stderr.write("ip: not found\n")
    return 127


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    node_dir = os.environ.get("COCKPIT_SIM_NODE_DIR", "")
    ifaces = load(node_dir) if node_dir else []
    if args[:1] in (["-V"], ["-Version"]):
        return _machine_ip(args)
    if not ifaces:
        sys.stderr.write(f"ip: no network data for this node in {node_dir or '(unset)'}\n")
        return 1
    try:
        text = run(ifaces, args)
    except UsageError as exc:
        sys.stderr.write(f"{exc}\n")
        return exc.status
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    return 0
