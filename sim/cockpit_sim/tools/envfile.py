"""`docker run --env-file FILE` as the Docker CLI reads it (docker/cli opts/file.go, checked
against docker 20.10): KEY=VALUE lines taken verbatim, leading blanks and `#` comment lines
skipped, a bare KEY takes the caller's value (dropped when the caller has none); the files come
before `-e`, so `-e` wins."""

from __future__ import annotations

import os
from collections.abc import Mapping


class EnvFileError(Exception):
    """The message docker prints (after `docker: `) for a file it cannot use."""


def read_env_file(path: str, environ: Mapping[str, str] = os.environ) -> list[str]:
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise EnvFileError(f"open {path}: {(exc.strerror or str(exc)).lower()}") from None
    entries = []
    for number, data in enumerate(raw.split(b"\n"), start=1):
        if number == 1:
            data = data.removeprefix(b"\xef\xbb\xbf")
        try:
            line = data.decode("utf-8").removesuffix("\r").lstrip()
        except UnicodeDecodeError:
            raise EnvFileError(
                f"env file {path} contains invalid utf8 bytes at line {number}"
            ) from None
        if not line or line.startswith("#"):
            continue
        key, eq, value = line.partition("=")
        key = key.lstrip(" \t")
        if " " in key or "\t" in key:
            raise EnvFileError(
                f"poorly formatted environment: variable '{key}' contains whitespaces"
            )
        if not key:
            raise EnvFileError(f"poorly formatted environment: no variable name on line '{line}'")
        if eq:
            entries.append(f"{key}={value}")
        elif line.strip() in environ:
            entries.append(f"{line.strip()}={environ[line.strip()]}")
    return entries
