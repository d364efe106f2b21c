"""The one severity of a container log line, whoever asks: the store tags each line with it, the
log panes paint that tag and their level filter keeps by it, so what is red is what "error" shows;
the NCCL pane counts an NCCL line a warning when it is rated warning or worse (`nccl_events`).

The line's own level decides when it has one (vLLM's logger, uvicorn, torch's c10, NCCL's
`NCCL WARN`, a bare line that starts with one); else a line is an error when it opens a Python
traceback or ends one (the exception line: `torch.OutOfMemoryError: CUDA out of memory.`) or
tells of an NCCL collective timeout, and a warning when Python's `warnings` printed it. A word
inside a message is not a level: `WARNING … OSError: …` is a warning, `INFO … NCCL_DEBUG=WARN`
is neither.
"""

from __future__ import annotations

import re
from typing import Final, Literal

from cockpit.telemetry.nccl_log import parse_nccl_line
from cockpit.telemetry.vllm_events import EXCEPTION_RE, TIMEOUT_RE
from cockpit.telemetry.vllm_log import parse_log_line

Severity = Literal["ERROR", "WARNING"]
ERROR: Final = "ERROR"
WARNING: Final = "WARNING"

_OF_LEVEL: dict[str, Severity] = {
    "CRITICAL": ERROR,
    "ERROR": ERROR,
    "WARNING": WARNING,
    "WARN": WARNING,  # NCCL's (vLLM's parse already says WARNING)
}
# A line with none of these words is below WARNING whatever its shape: the cheap test first, as
# the store runs every line of a flood (tens of thousands a second) through here.
_MAYBE = re.compile(
    r"WARN|ERROR|CRITICAL|Traceback|Error|Exception|Interrupt|Exit|Warning|\[[EWF]\d"
    r"|Watchdog|NCCL timeout"
)
_LEADING = re.compile(r"(CRITICAL|ERROR|WARNING|WARN)\b")  # a bare `ERROR: …` (pip, scripts)
_PY_WARNING = re.compile(r"\.py:\d+: [A-Z]\w*Warning: ")  # `warnings.warn`: `x.py:24: …Warning: …`


def severity(line: str) -> Severity | None:
    """ERROR, WARNING, or None (info, debug, or a line that says nothing of itself)."""
    if not _MAYBE.search(line):
        return None
    log = parse_log_line(line)
    if log.level is not None:
        return _OF_LEVEL.get(log.level)
    if "NCCL " in log.message and (nccl := parse_nccl_line(log.message)) is not None:
        return _OF_LEVEL.get(nccl.level)
    message = log.message.strip()
    if leading := _LEADING.match(message):
        return _OF_LEVEL[leading.group(1)]
    if message.startswith("Traceback") or EXCEPTION_RE.match(message) or TIMEOUT_RE.search(message):
        return ERROR
    return WARNING if _PY_WARNING.search(message) else None


def rank(level: Severity | None) -> int:
    """1 below WARNING, 2 WARNING, 3 ERROR: the level filter keeps the lines at or above its own."""
    return 3 if level == ERROR else 2 if level == WARNING else 1
