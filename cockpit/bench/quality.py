"""tool-eval-bench (PyPI, 3.x) for the quality score: its invocation and its output parsed.

Quality cannot be simulated (it is the model's tool-calling skill), so the parser is tested on
recorded output. The seed writes a result as `P/M (N/100)`: points earned of the maximum, and the
final score. Both the markdown report (`**Final Score**: **N** / 100`, `**Total Points**: P / M`)
and the terminal summary (`Points: P/M`, `Quality: N/100`, ...) are understood.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from cockpit.bench.models import Quality

_FINAL = re.compile(r"\*\*Final Score\*\*:\s*\*\*(\d+)\*\*\s*/\s*100")
_TOTAL = re.compile(r"\*\*Total Points\*\*:\s*(\d+)\s*/\s*(\d+)")
_POINTS = re.compile(r"^\s*Points:\s*(\d+)\s*/\s*(\d+)", re.MULTILINE)
_QUALITY = re.compile(r"^\s*(?:- \*\*)?Quality(?:\*\*)?:\s*(\d+)\s*/\s*100", re.MULTILINE)
_EXTRA = re.compile(
    r"^\s*(?:- \*\*)?(Responsiveness|Deployability)(?:\*\*)?:\s*\**(\d+)\**\s*/\s*100"
    r"(?:\s*\(([^)]*)\))?",
    re.MULTILINE,
)


def parse_quality(text: str) -> Quality | None:
    """Points and score from a tool-eval-bench report or terminal output; None if absent."""
    total = _TOTAL.search(text) or _POINTS.search(text)
    final = _FINAL.search(text)
    score = int(final.group(1)) if final else None
    if score is None:
        quality = _QUALITY.search(text)
        score = int(quality.group(1)) if quality else None
    if total is None and score is None:
        return None
    extra: dict[str, str] = {}
    for match in _EXTRA.finditer(text):
        name, value, note = match.group(1).lower(), match.group(2), match.group(3)
        extra[name] = f"{value}/100" + (f" ({note})" if note else "")
    return Quality(
        points=int(total.group(1)) if total else None,
        max_points=int(total.group(2)) if total else None,
        score=score,
        extra=extra,
    )


@dataclass(frozen=True)
class PerfRow:
    """One row of tool-eval-bench's perf table (its figures, in its clock)."""

    test: str
    pp_tps: float
    tg_tps: float
    ttft_ms: float
    total_ms: float


def _number(cell: str) -> float:
    return float(cell.replace(",", "").strip())


def parse_perf_table(text: str) -> list[PerfRow]:
    """Rows of `| Test | pp t/s | tg t/s | TTFT (ms) | Total (ms) | Tokens |`."""
    rows: list[PerfRow] = []
    in_table = False
    for line in text.splitlines():
        if not line.startswith("|"):
            in_table = False
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[:3] == ["Test", "pp t/s", "tg t/s"]:
            in_table = True
            continue
        if not in_table or len(cells) < 5 or set(cells[1]) <= {"-", ":"}:
            continue
        try:
            rows.append(PerfRow(cells[0], *(_number(c) for c in cells[1:5])))
        except ValueError:
            continue
    return rows


def quality_argv(
    base_url: str,
    model: str,
    label: str,
    output_dir: Path,
    *,
    exe: str = "tool-eval-bench",
    perf: bool = False,
    depths: tuple[int, ...] = (),
    concurrency: tuple[int, ...] = (1,),
    tokenizer: Path | None = None,
    cold: bool = False,
    benchy_args: tuple[str, ...] = (),
) -> list[str]:
    """The tool-eval-bench command line: quality only, or its perf part only (`perf=True`).

    Its perf part drives llama-benchy with `--no-cache` and without prefix caching unless asked:
    the seed's §3 artifact. Unless `cold`, `--enable-prefix-caching` goes through
    `--benchy-args`, as the seed's fixed `sm121 bench` does; `benchy_args` adds more (offline:
    `--book-url`, `--skip-coherence`).
    """
    argv = [exe, "--base-url", f"{base_url}/v1", "--model", model, "--label", label]
    argv += ["--output-dir", str(output_dir)]
    if perf:
        argv += ["--perf-only", "--skip-tool-eval"]
        if depths:
            argv += ["--depth", ",".join(map(str, depths))]
        argv += ["--concurrency", ",".join(map(str, concurrency))]
        if tokenizer is not None:
            argv += ["--tokenizer", str(tokenizer)]
        extra = benchy_args if cold else ("--enable-prefix-caching", *benchy_args)
        if extra:
            argv += ["--benchy-args", shlex.join(extra)]
    return argv
