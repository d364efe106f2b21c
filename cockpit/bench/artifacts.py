"""Report files: `reports/<YYYY-MM-DD_HHMMSS>_<label>.{json,md,svg,png,html}`, written atomically.

The JSON is the record; the markdown, the depth curve's picture (SVG and PNG) and the HTML page
that embeds it are drawn from what the JSON says (secrets already redacted).

A new report's baseline is the newest earlier report that measured the same thing (lane,
recipe, model, warm/cold mode, driver: `likeness`); it records that file and shows its deltas
against it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from cockpit.atomic import write_atomic
from cockpit.bench import draw
from cockpit.bench.figures import depth_figure
from cockpit.bench.html_report import render_html
from cockpit.bench.likeness import Likeness, differences, likeness
from cockpit.bench.models import SCHEMA, Report, SweepPlan, from_json, to_json
from cockpit.bench.report import render_markdown
from cockpit.errors import InputError
from cockpit.paths import state_dir
from cockpit.redact import redact

_LABEL = re.compile(r"[^A-Za-z0-9._-]+")


def timestamp(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).strftime("%Y-%m-%d_%H%M%S")


LABEL_MAX = 64
"""The longest label a file name carries: a longer one is cut and told apart by a hash (a
300-character label made every report name too long for the file system, after the sweep)."""


def safe_label(label: str) -> str:
    """A label usable in a file name (the operators' labels are kebab-case already): unsafe
    characters become `-`; past LABEL_MAX, the start and a hash of the whole label."""
    safe = _LABEL.sub("-", label).strip("-") or "bench"
    if len(safe) <= LABEL_MAX:
        return safe
    digest = hashlib.sha256(label.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{safe[: LABEL_MAX - len(digest) - 1].rstrip('-.')}-{digest}"


def fallback_reports_dir() -> Path:
    """Where a report goes when its folder cannot take it (the sweep's results are never lost
    for want of a place): the cockpit's state folder."""
    return state_dir() / "reports"


def load_report(path: Path) -> Report:
    """A report from its `.json` (or from the `.md` next to it); anything else is refused in one
    line saying why (a pydantic dump of 18 lines told an operator nothing)."""
    source = path.with_suffix(".json") if path.suffix == ".md" else path
    try:
        return parse_report(json.loads(source.read_text(encoding="utf-8")))
    except FileNotFoundError:
        reason = "no such file"
    except IsADirectoryError:
        reason = "a folder"
    except OSError as exc:
        reason = exc.strerror or str(exc)
    except UnicodeDecodeError:
        reason = "not UTF-8 text"
    except json.JSONDecodeError as exc:
        reason = f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
    except ValueError as exc:
        reason = str(exc)
    raise InputError(f"{source}: not a cockpit bench report ({reason})")


_JSON_TYPES = {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}


def parse_report(data: object) -> Report:
    """A report from parsed JSON; a ValueError with a short reason when it is none."""
    if not isinstance(data, dict):
        raise ValueError(f"a JSON {_JSON_TYPES.get(type(data), 'null')}, not an object")
    if data.get("schema", SCHEMA) != SCHEMA:
        raise ValueError(f"schema {data['schema']!r}, expected {SCHEMA!r}")
    try:
        return from_json(Report, data)
    except ValidationError as exc:
        errors = exc.errors()
        first = errors[0]
        where = ".".join(str(part) for part in first["loc"])
        what = (
            f"missing field {where!r}"
            if first["type"] == "missing"
            else f"field {where!r}: {first['msg']}"
        )
        more = f" and {len(errors) - 1} more" if len(errors) > 1 else ""
        raise ValueError(what + more) from None


def _reports(directory: Path) -> Iterator[tuple[tuple[str, int], Report, Path]]:
    """Every report in `directory` with its order (creation stamp, then write time: two reports
    made in the same second keep their order; their names alone would sort by label); files that
    are no report are passed over."""
    for path in directory.glob("*.json") if directory.is_dir() else ():
        try:
            report = parse_report(json.loads(path.read_text(encoding="utf-8")))
            written = path.stat().st_mtime_ns
        except (OSError, ValueError):
            continue
        yield (report.created, written), report, path


def baseline_for(directory: Path, like: Likeness) -> Path | None:
    """The newest report in `directory` that measured what `like` describes (same lane, recipe,
    model, mode and driver)."""
    found = [
        (order, path)
        for order, report, path in _reports(directory)
        if not differences(likeness(report), like)
    ]
    return max(found)[-1] if found else None


def last_plan(directory: Path, lane: str, cluster: str) -> SweepPlan | None:
    """The plan of the lane's newest report that recorded one, whatever it measured (a cold or
    llama-benchy sweep, the CLI's or the TUI's): the sweep an operator last asked of the lane."""
    found = [
        (order, report.plan)
        for order, report, _ in _reports(directory)
        if (report.lane, report.cluster) == (lane, cluster) and report.plan is not None
    ]
    return max(found, key=lambda item: item[0])[1] if found else None


def baseline_of(report: Report, directory: Path) -> Report | None:
    """The baseline `report` recorded, read from `directory`; None when it has none or it is
    gone or broken (that costs the deltas and the dashed curve only)."""
    if report.baseline:
        with contextlib.suppress(InputError):
            return load_report(directory / report.baseline)
    return None


def reports_in(directory: Path) -> list[Report]:
    """Every report in `directory`, oldest first (by creation, then write time); files that are
    no report are passed over."""
    return [report for _, report, _ in sorted(_reports(directory), key=lambda found: found[0])]


def save_report(directory: Path, report: Report, *, draw_now: bool = True) -> tuple[Path, Path]:
    """Write the report's JSON and markdown (with deltas against its baseline), its depth curve
    (`.svg`, `.png`) and the HTML page that embeds it (`.html`); returns the first two.
    `draw_now=False` (a cancelled sweep, which must not wait): the record now, the pictures in
    a thread of their own (not a daemon: a CLI process ends once they are written).
    A folder that cannot take it (not writable, a file, a full disk) sends it to
    `fallback_reports_dir()`: the returned paths say where it went."""
    baseline = baseline_of(report, directory)
    json_text = redact(json.dumps(to_json(report), indent=2)) + "\n"
    markdown = redact(render_markdown(report, baseline, f"{report.stem}.svg"))
    try:
        json_path = _write_record(directory / f"{report.stem}.json", json_text, markdown)
    except OSError:
        fallback = fallback_reports_dir()
        if directory.absolute() == fallback.absolute():
            raise
        json_path = _write_record(fallback / f"{report.stem}.json", json_text, markdown)
    if draw_now:
        _draw(json_path, json_text, markdown, baseline)
    else:
        args = (json_path, json_text, markdown, baseline)
        threading.Thread(target=_draw, args=args, name="bench-pictures").start()
    return json_path, json_path.with_suffix(".md")


def _write_record(json_path: Path, json_text: str, markdown: str) -> Path:
    """The report's JSON, then its markdown beside it: the record stands if drawing fails."""
    write_atomic(json_path, json_text)
    write_atomic(json_path.with_suffix(".md"), markdown)
    return json_path


def _draw(json_path: Path, json_text: str, markdown: str, baseline: Report | None) -> None:
    """The depth curve and the page, drawn from what the record says (~0.2 s, 0.6 s with
    matplotlib's import)."""
    svg_path = json_path.with_suffix(".svg")
    shown = parse_report(json.loads(json_text))
    fig = draw.figure(depth_figure(shown, baseline))
    image = draw.svg(fig)
    write_atomic(svg_path, image)
    write_atomic(json_path.with_suffix(".png"), draw.png(fig))
    title = f"Bench {shown.label}: {shown.lane} on {shown.cluster}"
    write_atomic(json_path.with_suffix(".html"), render_html(markdown, title, svg_path.name, image))
