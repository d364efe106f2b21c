"""Operation records on the nodes (pure): their form, the commands that write, remove and list
them, and their parser. `cockpit.ops.inflight` writes them; the status probe reads them.

An operation's record is the file `$HOME/.cockpit/ops/<node>.<id>.json` on each node it works on:
one JSON line saying who (user@host, pid), what (operation, lane, cluster), since when, and how
far (its step). Like a lock, a record is a lease: one not rewritten for a lease is stale (its
cockpit died), judged by the node's clock (the file's age, read on the node with its content);
the next record written on that node removes those older than `FORGET_S`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from cockpit.ops.locks import LEASE, Lease

FORGET_S = 600  # a stale record older than this is removed by the next writer on its node

_WRITE = f"""\
dir="$HOME/.cockpit/ops"; file="$dir/$1"
mkdir -p -- "$dir" && printf '%s\\n' "$2" > "$file.$$.tmp" && mv -f -- "$file.$$.tmp" "$file"
find "$dir" -maxdepth 1 -name '*.json' -mmin +{FORGET_S // 60} -delete 2>/dev/null
exit 0
"""
_REMOVE = """\
rm -f -- "$HOME/.cockpit/ops/$1"
exit 0
"""
LIST_SH = """\
ops() {  # every operation record: "<file name><TAB><age in s by this node's clock><TAB><line>"
  local f l m now
  for f in "$HOME"/.cockpit/ops/*.json; do
    [ -f "$f" ] || continue
    IFS= read -r l <"$f"
    m=$(date -r "$f" +%s 2>/dev/null) || continue
    printf -v now '%(%s)T' -1
    printf '%s\\t%s\\t%s\\n' "${f##*/}" "$(( now - m ))" "$l"
  done
  return 0
}
"""
"""A bash function for the status probe: the records with their age, read in one command."""


POINTS_KEPT = 64  # a bench record carries its newest points, no more


@dataclass(frozen=True)
class BenchPoint:
    """One measured point of a bench in flight: where, and its prompt and decode rates."""

    depth: int
    concurrency: int
    tg_tps: float | None
    pp_tps: float | None

    @classmethod
    def of(cls, data: dict[str, object]) -> BenchPoint:
        """From its JSON form; raises ValueError, TypeError or KeyError when it is not one."""
        tg, pp = data["tg_tps"], data["pp_tps"]
        return cls(
            int(data["depth"]),  # type: ignore[call-overload]
            int(data["concurrency"]),  # type: ignore[call-overload]
            None if tg is None else float(tg),  # type: ignore[arg-type]
            None if pp is None else float(pp),  # type: ignore[arg-type]
        )


@dataclass(frozen=True)
class OpRecord:
    """One operation in flight, as its cockpit records it on a node."""

    id: str
    user: str
    host: str
    pid: int
    op: str
    lane: str
    cluster: str
    since: float  # the writer's clock: shown, never judged
    step: str = ""  # where it is ("boot on dgx1", "point 3/8 pp512 tg32")
    nodes: tuple[str, ...] = ()  # every node it works on
    points: tuple[BenchPoint, ...] = ()  # a bench's points measured so far (its tail)

    @property
    def holder(self) -> str:
        return f"{self.user}@{self.host}"

    @property
    def what(self) -> str:
        return " ".join(p for p in (self.op, self.lane, self.cluster and f"@ {self.cluster}") if p)

    def dumps(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    @classmethod
    def loads(cls, text: str) -> OpRecord | None:
        try:
            data = json.loads(text)
            return cls(
                id=str(data["id"]),
                user=str(data["user"]),
                host=str(data["host"]),
                pid=int(data["pid"]),
                op=str(data["op"]),
                lane=str(data.get("lane", "")),
                cluster=str(data.get("cluster", "")),
                since=float(data["since"]),
                step=str(data.get("step", "")),
                nodes=tuple(str(n) for n in data.get("nodes", ())),
                points=tuple(BenchPoint.of(p) for p in data.get("points", ())[:POINTS_KEPT]),
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return None

    def file_name(self, node: str) -> str:
        return f"{node}.{self.id}.json"


@dataclass(frozen=True)
class OpOnNode:
    """A record as read on a node: the record and its age by the node's clock."""

    record: OpRecord
    age_s: float

    def stale(self, lease: Lease = LEASE) -> bool:
        """Not rewritten for a lease: the cockpit that ran it is gone."""
        return self.age_s >= lease.seconds


def parse_records(node: str, text: str) -> list[OpOnNode]:
    """`LIST_SH`'s output on `node` → its records (other nodes' files, as on a home directory
    shared over NFS, and unreadable ones are left out)."""
    out = []
    for line in text.splitlines():
        name, age, content = [*line.split("\t", 2), "", ""][:3]
        record = OpRecord.loads(content) if name.startswith(f"{node}.") else None
        if record is not None and age.lstrip("-").isdigit():
            out.append(OpOnNode(record, max(float(age), 0.0)))
    return out


def write_command(node: str, record: OpRecord) -> list[str]:
    return ["bash", "-c", _WRITE, "cockpit-op", record.file_name(node), record.dumps()]


def remove_command(node: str, record: OpRecord) -> list[str]:
    return ["bash", "-c", _REMOVE, "cockpit-op-rm", record.file_name(node)]
