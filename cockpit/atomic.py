"""Replace a file atomically: readers and a crash see the old content or the new, never half.

Every file the cockpit writes (the TUI's `tui.toml`, `boot-history.json`, bench reports) goes
through `write_atomic`: the bytes go to a temporary file in the same folder, are fsynced, renamed
over the target, and the folder is fsynced so the rename itself survives a power cut. Truncating
the target and writing it in place (what `Path.write_text` does) leaves an empty file when the
writer is killed in between, and an empty `tui.toml` is valid TOML: the keymap silently vanishes.

A writer killed before its rename leaves its temporary file behind. The temporary names say
whose they are (`.<name>.<host>.<pid>.<random>.tmp`), so every write first sweeps the target's
leftovers: those of a process of this host that is gone, and any older than a day (a writer on
another host sharing the folder, whose pid cannot be checked from here).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import time
from pathlib import Path

from cockpit.pids import pid_exists

STALE_AFTER_S = 24 * 3600.0
SUFFIX = ".tmp"


def _host() -> str:
    """This host's name as it may appear inside a file name."""
    return socket.gethostname().replace(".", "_").replace("/", "_") or "localhost"


def temp_name(target: Path) -> Path:
    """A fresh temporary path next to `target`, naming this host and process."""
    token = secrets.token_hex(4)
    return target.with_name(f".{target.name}.{_host()}.{os.getpid()}.{token}{SUFFIX}")


def _owner(temp: Path, target: Path) -> tuple[str, int] | None:
    """(host, pid) of a temporary file of `target`, None when the name is not one of ours."""
    prefix = f".{target.name}."
    if not (temp.name.startswith(prefix) and temp.name.endswith(SUFFIX)):
        return None
    host, _, rest = temp.name[len(prefix) : -len(SUFFIX)].partition(".")
    pid, _, token = rest.partition(".")
    if not (host and pid.isdigit() and token):
        return None
    return host, int(pid)


def leftovers(target: Path) -> list[Path]:
    """Every temporary file of `target` in its folder, whoever wrote it."""
    try:
        entries = list(target.parent.iterdir())
    except OSError:
        return []
    return [p for p in entries if _owner(p, target) is not None]


def sweep(target: Path, now: float | None = None) -> list[Path]:
    """Remove the temporary files of `target` that no live writer owns; returns them."""
    now = time.time() if now is None else now
    removed = []
    for temp in leftovers(target):
        host, pid = _owner(temp, target) or ("", 0)
        try:
            old = now - temp.lstat().st_mtime > STALE_AFTER_S
        except OSError:
            continue
        if old or (host == _host() and not pid_exists(pid)):
            with contextlib.suppress(OSError):
                temp.unlink()
                removed.append(temp)
    return removed


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: str | bytes, mode: int | None = None) -> None:
    """Replace `path` with `data` (text is UTF-8) in one rename.

    A symlink is followed (the file it points to is replaced, the link stays). The new file
    keeps the old one's permissions; a new file gets `mode`, else 0o666 less the umask.
    """
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    sweep(target)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    with contextlib.suppress(FileNotFoundError):
        mode = target.stat().st_mode & 0o7777
    temp = temp_name(target)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    _fsync_dir(target.parent)
