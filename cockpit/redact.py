"""The one redactor: secrets never reach a terminal, a pane, a log, a report or a history file.

A secret is recognised three ways, so a value slips through none of the outputs:
- **by name**: the value of a secret-named key or flag (`HF_TOKEN=…`, `--api-key …`,
  `'api_key': '…'` as vLLM prints its non-default args, `"token": "…"` in JSON). A name is secret
  when one of its words is TOKEN, KEY, SECRET, PASSWORD, … (`max_num_batched_tokens` is not);
- **by shape**: what looks like a token wherever it stands (`sk-…`, `hf_…`, `ghp_…`, AWS key ids,
  JWTs, `Bearer …`, the password of a `scheme://user:password@host` URL);
- **by value**: every secret value the loaded inventory holds (`remember`, called when an
  inventory is loaded), wherever it appears, e.g. echoed by an engine's log.

Outputs call `shown()` (redacted, then control characters escaped) at their edge: the CLI's
printers, the operation events (`cockpit.events`), the TUI store's log lines, reports.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from cockpit.printable import printable

REDACTED = "<redacted>"
MIN_KNOWN_LEN = 8
"""Shorter remembered values are redacted by name only: replacing `abc` everywhere would maul
every line (and guessing a value that short needs no log)."""

_SECRET_WORDS = frozenset(
    {
        "TOKEN",
        "KEY",
        "APIKEY",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASSPHRASE",
        "CREDENTIAL",
        "CREDENTIALS",
        "AUTHORIZATION",
        "COOKIE",
    }
)
_SECRET_ENDINGS = ("TOKEN", "SECRET", "PASSWORD", "APIKEY")
_WORD = re.compile(r"[A-Za-z0-9]+")

_SHAPES = [  # (lowercase literals one of which a match holds, pattern)
    (("sk-",), re.compile(r"\bsk-[A-Za-z0-9][A-Za-z0-9_-]{15,}")),
    (("hf_",), re.compile(r"\bhf_[A-Za-z0-9]{16,}")),
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}")),
    (("github_pat_",), re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}")),
    (("xox",), re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    (("akia",), re.compile(r"\bAKIA[0-9A-Z]{16}\b")),
    (("eyj",), re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}")),
]
_BEARER = re.compile(r"(?i)\b(bearer\s+)([A-Za-z0-9._~+/=-]{8,})")
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^/\s:@]+:)([^@\s/]+)(@)")
_QUOTED = r"\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'"
_ASSIGN = re.compile(r"(?<![\w.-])([A-Za-z_][\w.-]*)(=)(" + _QUOTED + r"|[^\s,;'\"}\]]+)")
_FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z0-9][\w-]*)(=|\s+)(" + _QUOTED + r"|[^\s'\"]+)")
_MAPPING = re.compile(r"([\"'])([^\"'\s]+)\1(\s*:\s*)(\[[^\]]*\]|" + _QUOTED + r"|[^\s,}\]]+)")
_NAME_HINTS = ("token", "key", "secret", "pass", "credential", "authorization", "cookie")
"""Lowercase fragments of every secret name: a line holding none needs no by-name pass (the
TUI store redacts every log line; most hold none of them)."""

_ALL_HINTS = (*_NAME_HINTS, *(lit for lits, _ in _SHAPES for lit in lits), "bearer", "://")

_known: tuple[str, ...] = ()  # longest first
_known_pattern: re.Pattern[str] | None = None


def _holds_any(text: str, fragments: tuple[str, ...]) -> bool:
    for fragment in fragments:  # noqa: SIM110 (a plain loop: cheaper than any() or a regex)
        if fragment in text:
            return True
    return False


def is_secret_name(name: str) -> bool:
    """`HF_TOKEN`, `--api-key`, `apiKey`, `db.password`: yes; `max_num_batched_tokens`: no."""
    for word in _WORD.findall(name):
        upper = word.upper()
        if upper in _SECRET_WORDS or upper.endswith(_SECRET_ENDINGS):
            return True
    return False


def remember(values: Iterable[str]) -> None:
    """Redact these values wherever they appear from now on (in this process)."""
    global _known, _known_pattern
    new = {v for v in values if len(v) >= MIN_KNOWN_LEN} - set(_known)
    if new:
        _known = tuple(sorted({*_known, *new}, key=len, reverse=True))
        _known_pattern = re.compile("|".join(re.escape(v) for v in _known))


def _hide_value(value: str) -> str:
    """The redacted form of one value, keeping its quotes (and a list's brackets)."""
    if value.startswith("["):
        return re.sub(_QUOTED, lambda m: m.group()[0] + REDACTED + m.group()[0], value)
    if value[:1] in "\"'" and len(value) >= 2:
        return value[0] + REDACTED + value[0]
    return REDACTED


def _by_name(match: re.Match[str], name_group: int, value_group: int) -> str:
    name, value = match.group(name_group), match.group(value_group)
    if not is_secret_name(name) or value == REDACTED or value.startswith("-"):
        return match.group()
    start, end = match.span(value_group)
    offset = match.start()
    text = match.group()
    return text[: start - offset] + _hide_value(value) + text[end - offset :]


def redact(text: str) -> str:
    """`text` with every secret it holds replaced by `<redacted>`.

    Each pass runs only when the text holds a fragment it could match (substring tests cost a
    tenth of a regex search): a plain log line costs a few microseconds."""
    if _known_pattern is not None and _holds_any(text, _known):
        text = _known_pattern.sub(REDACTED, text)
    low = text.lower()
    if not _holds_any(low, _ALL_HINTS):
        return text
    for literals, shape in _SHAPES:
        if any(literal in low for literal in literals):
            text = shape.sub(REDACTED, text)
    if "bearer" in low:
        text = _BEARER.sub(lambda m: m.group(1) + REDACTED, text)
    if "://" in low:
        text = _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED + m.group(3), text)
    if any(hint in low for hint in _NAME_HINTS):
        text = _MAPPING.sub(lambda m: _by_name(m, 2, 4), text)
        text = _ASSIGN.sub(lambda m: _by_name(m, 1, 3), text)
        text = _FLAG.sub(lambda m: _by_name(m, 1, 3), text)
    return text


def shown(text: str) -> str:
    """What an output may print of `text`: redacted, control and bidi characters escaped."""
    return printable(redact(text))


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """An environment for display: secret-named keys' values hidden, the others redacted."""
    return {k: REDACTED if is_secret_name(k) else redact(v) for k, v in env.items()}


_ENV_FLAGS = frozenset({"-e", "--env"})


def redact_argv(argv: Sequence[str]) -> tuple[str, ...]:
    """An argv for display: `-e SECRET=…` and `--secret-flag …` values hidden, every other word
    redacted by shape and value. The real argv keeps them."""
    out = [redact(word) for word in argv]
    for i, word in enumerate(argv):
        previous = argv[i - 1] if i else ""
        name, eq, _ = word.partition("=")
        if eq and (previous in _ENV_FLAGS or word.startswith("-")) and is_secret_name(name):
            out[i] = f"{name}={REDACTED}"
        elif (
            previous.startswith("--")
            and "=" not in previous
            and not word.startswith("-")
            and is_secret_name(previous)
        ):
            out[i] = REDACTED
    return tuple(out)
