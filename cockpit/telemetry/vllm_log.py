"""vLLM container log lines → typed records: level, time, source, process, message.

Line shapes accepted (ANSI colours, a `docker logs --timestamps` prefix and tqdm's `\\r` redraws are
tolerated):

- `(APIServer pid=1) INFO 11-29 19:05:30 [loggers.py:335] msg` and the same without the process
  tag; older builds without the opening bracket (`INFO 12-19 22:58:27 model_runner.py:1415] msg`);
- uvicorn's `INFO:     Application startup complete.` and its access lines
  (`INFO:     127.0.0.1:53918 - "GET /metrics HTTP/1.1" 200 OK`, see `routine_access`);
- torch/c10's `[rank1]:[E1129 19:05:30.123456 ProcessGroupNCCL.cpp:616] msg`;
- anything else is a bare line (tqdm bars, tracebacks) with level None.

What a line tells (boot progress, throughput, failures) is `vllm_events`' business.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_DOCKER_TS_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)\s")
_PROC_RE = re.compile(r"^\((?P<proc>[^()\s]+) pid=(?P<pid>\d+)\)\s?")
_VLLM_RE = re.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+"
    r"(?P<ts>\d\d-\d\d \d\d:\d\d:\d\d)(?:\.\d+)?\s+\[?(?P<src>[^\]\s]+:\d+)\]\s?(?P<msg>.*)$"
)
_UVICORN_RE = re.compile(r"^(?P<level>INFO|WARNING|ERROR|CRITICAL|DEBUG):\s+(?P<msg>.*)$")
_C10_RE = re.compile(
    r"^(?:\[rank\d+\]:)?\[(?P<lvl>[IWEF])(?P<ts>\d{4} \d\d:\d\d:\d\d)(?:\.\d+)?\s+"
    r"(?P<src>[^\]]+)\]\s?(?P<msg>.*)$"
)
_C10_LEVELS = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "CRITICAL"}


@dataclass(frozen=True)
class LogLine:
    """One log line split into its parts; `level` is None for bare lines (tqdm, tracebacks)."""

    raw: str
    message: str
    level: str | None = None
    timestamp: str | None = None
    source: str | None = None
    process: str | None = None
    pid: int | None = None


def clean(line: str) -> str:
    """Drop ANSI colours, the docker timestamp and all but the last tqdm `\\r` redraw."""
    text = _ANSI_RE.sub("", line.rstrip("\r\n"))
    if "\r" in text:
        parts = [p for p in text.split("\r") if p.strip()]
        text = parts[-1] if parts else ""
    return _DOCKER_TS_RE.sub("", text)


def parse_log_line(line: str) -> LogLine:
    """Split a vLLM log line; never fails (an unknown shape is a bare line)."""
    text = clean(line)
    process = pid = None
    proc = _PROC_RE.match(text)
    if proc:
        process, pid = proc.group("proc"), int(proc.group("pid"))
        text = text[proc.end() :]
    if match := _VLLM_RE.match(text):
        level = "WARNING" if match.group("level") == "WARN" else match.group("level")
        return LogLine(
            line, match.group("msg"), level, match.group("ts"), match.group("src"), process, pid
        )
    if match := _UVICORN_RE.match(text):
        return LogLine(line, match.group("msg"), match.group("level"), None, None, process, pid)
    if match := _C10_RE.match(text):
        level = _C10_LEVELS[match.group("lvl")]
        return LogLine(
            line, match.group("msg"), level, match.group("ts"), match.group("src"), process, pid
        )
    return LogLine(line, text, None, None, None, process, pid)


_ACCESS_RE = re.compile(r'^(?:\S+ )?- "[A-Z]+ \S+ HTTP/[\d.]+" (?P<status>\d{3})\b')


def routine_access(line: str) -> bool:
    """Whether `line` is uvicorn's access line of a request that succeeded (status < 400).

    Under load these are most of an engine's log (the cockpit's own `/metrics` scrapes, health
    checks, every bench request) and bury its `Engine 000:` stats, so the Log pane folds them. A
    failed request's line (4xx, 5xx) is not routine: it stays in view. Accepts every shape
    `parse_log_line` does (vLLM's process tag, a docker timestamp, ANSI colours)."""
    if " HTTP/" not in line:
        return False  # the cheap test first: the TUI's store runs every log line through here
    log = parse_log_line(line)
    if log.level is None or log.source is not None:  # not uvicorn's own `LEVEL:     …` shape
        return False
    match = _ACCESS_RE.match(log.message)
    return match is not None and int(match.group("status")) < 400
