"""Report files: `reports/<YYYY-MM-DD_HHMMSS>_<label>.{json,md}`, written atomically.

The lane's last report (same recipe and cluster, by file name order = time order) is its
baseline: a new report records that file and shows its deltas against it.
"""

from __future__ import annotations

import contextlib
import json
import re
from datetime import UTC, datetime
from pathlib import Path

from cockpit.atomic import write_atomic
from cockpit.bench.models import Report, from_json, to_json
from cockpit.bench.report import render_markdown
from cockpit.errors import InputError
from cockpit.redact import redact

_LABEL = re.compile(r"[^A-Za-z0-9._-]+")


def timestamp(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).strftime("%Y-%m-%d_%H%M%S")


def safe_label(label: str) -> str:
    """A label usable in a file name (the operators' labels are kebab-case already)."""
    return _LABEL.sub("-", label).strip("-") or "bench"


def load_report(path: Path) -> Report:
    """A report from its `.json` (or from the `.md` next to it)."""
    source = path.with_suffix(".json") if path.suffix == ".md" else path
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{source}: cannot read a bench report ({exc})") from exc
    try:
        return from_json(Report, data)
    except ValueError as exc:
        raise InputError(f"{source}: not a cockpit bench report ({exc})") from exc


def lane_reports(directory: Path, lane: str, cluster: str) -> list[Path]:
    """The lane's reports, oldest first: by creation stamp, then write time (two reports made in
    the same second keep their order; their names alone would sort by label)."""
    found = []
    for path in directory.glob("*.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            written = path.stat().st_mtime_ns
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("lane") == lane and data.get("cluster") == cluster:
            found.append((str(data.get("created", "")), written, path))
    return [path for *_, path in sorted(found)]


def baseline_for(directory: Path, lane: str, cluster: str) -> Path | None:
    reports = lane_reports(directory, lane, cluster) if directory.is_dir() else []
    return reports[-1] if reports else None


def save_report(directory: Path, report: Report) -> tuple[Path, Path]:
    """Write the report's JSON and markdown (with deltas against its baseline)."""
    json_path = directory / f"{report.stem}.json"
    md_path = json_path.with_suffix(".md")
    baseline = None
    if report.baseline:
        with contextlib.suppress(InputError):  # an unreadable baseline costs the deltas only
            baseline = load_report(directory / report.baseline)
    write_atomic(json_path, redact(json.dumps(to_json(report), indent=2)) + "\n")
    write_atomic(md_path, redact(render_markdown(report, baseline)))
    return json_path, md_path
