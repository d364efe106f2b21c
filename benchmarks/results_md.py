"""benchmarks/RESULTS.md: each benchmark owns one marked block and rewrites only that block."""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")
PREAMBLE = (
    "# Benchmark results\n\n"
    "Every number here is printed by a script in `benchmarks/`; rerun it to check.\n"
)


def write_section(name: str, text: str, path: Path = RESULTS) -> None:
    """Put `text` between `<!-- name:begin -->` and `<!-- name:end -->`, replacing what was
    there, or append the block when the file has none yet."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    current = path.read_text(encoding="utf-8") if path.exists() else PREAMBLE
    block = f"{begin}\n{text}\n{end}"
    if begin in current and end in current:
        head, rest = current.split(begin, 1)
        current = head + block + rest.split(end, 1)[1]
    else:
        current = current.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(current, encoding="utf-8")
