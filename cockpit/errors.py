"""Errors the CLI turns into one clear line and an exit code, never a traceback."""

from __future__ import annotations

from dataclasses import dataclass

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_REFUSED = 2


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input file, located as precisely as we can."""

    file: str
    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        field = f"{self.field}: " if self.field else ""
        return f"{where}: {field}{self.message}" if where else f"{field}{self.message}"


class CockpitError(Exception):
    """Base of errors that the CLI reports as a single line."""

    exit_code = EXIT_FAILED


class InputError(CockpitError):
    """Bad input (files, flags): refused before anything touches a node."""

    exit_code = EXIT_REFUSED

    def __init__(self, problems: list[Problem] | str) -> None:
        if isinstance(problems, str):
            problems = [Problem("", None, "", problems)]
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))
