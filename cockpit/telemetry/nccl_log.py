"""An NCCL `NCCL_DEBUG=INFO` line → its parts (`NcclLine`): host, pid, tid, device, source, level.

NCCL prefixes its lines with `host:pid:tid [cudaDev]`, and WARN lines add `file.cc:line`:

    spark-3995:2981:2981 [0] NCCL INFO NET/IB : Using [0]rocep1s0f1:1/RoCE [RO]; OOB enp1s0f1np1:…
    node1:36754:36800 [0] misc/ibvwrap.cc:206 NCCL WARN Call to ibv_modify_qp failed ...

Lines without the prefix (`NCCL INFO Connected all rings`) are accepted too. What a line tells is
`nccl_events`' business, the per-rank summary `nccl_transport`'s; the split is a module of its own
because the severity classifier needs it (NCCL's own level), and the events need the classifier.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Searched, not anchored: the leftmost match starts at the host prefix when there is one, so a
# vLLM process tag or other text before it is skipped.
_LINE_RE = re.compile(
    r"(?:(?P<host>[^\s:()\[\]]+):(?P<pid>\d+):(?P<tid>\d+)\s+\[(?P<dev>\d+)\]\s+)?"
    r"(?:(?P<src>[\w./-]+\.\w+:\d+)\s+)?NCCL (?P<level>INFO|WARN|ERROR|TRACE)\b\s?(?P<msg>.*)$"
)
_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass(frozen=True)
class NcclLine:
    raw: str
    level: str  # INFO | WARN | ERROR | TRACE
    message: str
    host: str | None = None
    pid: int | None = None
    tid: int | None = None
    cuda_dev: int | None = None
    source: str | None = None


def parse_nccl_line(line: str) -> NcclLine | None:
    """Split an NCCL debug line; None for anything that is not one."""
    if "NCCL " not in line:
        return None  # the cheap test first: log panes feed every line through here
    match = _LINE_RE.search(_ANSI_RE.sub("", line).strip())
    if not match:
        return None

    def num(name: str) -> int | None:
        value = match.group(name)
        return int(value) if value is not None else None

    return NcclLine(
        raw=line,
        level=match.group("level"),
        message=match.group("msg").strip(),
        host=match.group("host"),
        pid=num("pid"),
        tid=num("tid"),
        cuda_dev=num("dev"),
        source=match.group("src"),
    )
