"""Values shown to the operator with their control and bidi characters escaped, never raw.

A recipe value, a log line or a node's answer can hold an ESC sequence (which repaints or retitles
the terminal), a NUL, or a bidi override such as U+202E (which shows `--port 1` as `1 trop--`):
what the operator reads must be what is there. Escapes use Python's spelling (`\\x1b`, `\\u202e`).
"""

from __future__ import annotations

import re
import shlex

# C0 and C1 controls, DEL, and the invisible format characters that reorder or hide text:
# Arabic letter mark, zero-width spaces and marks, line/paragraph separators, bidi embeddings,
# overrides and isolates, word joiner and invisible operators, the byte-order mark.
UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]"
)
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def _escape_bash(match: re.Match[str]) -> str:
    """As `_escape`, but C1 controls as `\\u0080`: bash's `\\x80` is the byte, not U+0080."""
    char = match.group()
    return _escape(match) if char in _NAMED or ord(char) < 0x80 else f"\\u{ord(char):04x}"


def printable(text: str) -> str:
    """`text` with every control and bidi character written as its escape."""
    if text.isprintable():  # every character of UNSAFE is unprintable: the common fast path
        return text
    return UNSAFE.sub(_escape, text)


def has_unsafe(text: str) -> bool:
    return UNSAFE.search(text) is not None


def shell_word(word: str) -> str:
    """One shell word for display: `shlex.quote`, or bash's `$'…'` quoting (escapes, same
    value in bash) when the word holds a character that must not reach the terminal raw."""
    if not has_unsafe(word):
        return shlex.quote(word)
    body = word.replace("\\", "\\\\").replace("'", "\\'")
    return "$'" + UNSAFE.sub(_escape_bash, body) + "'"
