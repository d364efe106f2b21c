"""Bench prompts cut from a token corpus, as llama-benchy's `PromptGenerator` does.

A (context, prompt) pair is a random window of `depth + pp` corpus tokens decoded back to text, so
with the engine's own tokenizer the counts are exact (the engine's `usage` stays the truth the
driver records). The corpus is a deterministic book of pseudo-words: the same text is served to
llama-benchy (`--book-url`) so both drivers measure the same kind of prompt.
"""

from __future__ import annotations

import random
import uuid
from functools import cache
from pathlib import Path

from tokenizers import Tokenizer

from cockpit.bench.models import PointSpec

_SYLLABLES = (
    "an", "ber", "cal", "do", "en", "fir", "gan", "hol", "is", "jun", "ka", "lor", "men", "nu",
    "o", "par", "qua", "ril", "sen", "tu", "ul", "ven", "wen", "xa", "yor", "zel",
)  # fmt: skip


@cache
def book_text(chars: int = 400_000, seed: int = 1859) -> str:
    """A deterministic public-domain-free "book": sentences of pseudo-words, `chars` long."""
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    while size < chars:
        words = [
            "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 3)))
            for _ in range(rng.randint(5, 14))
        ]
        sentence = " ".join(words).capitalize() + ". "
        parts.append(sentence)
        size += len(sentence)
    return "".join(parts)[:chars]


def _tokenizer_file(directory: Path) -> Path:
    """`tokenizer.json` in a directory, or the path itself when it is that file."""
    return directory if directory.is_file() else directory / "tokenizer.json"


def tokenizer_problem(path: Path) -> str | None:
    """Why `path` (a folder holding `tokenizer.json`, or that file) cannot be the bench's
    tokenizer, in a few words; None when it loads."""
    file = _tokenizer_file(path)
    if not file.is_file():
        return f"{path} holds no tokenizer.json (give the served model's tokenizer folder)"
    try:
        Tokenizer.from_file(str(file))
    except Exception as exc:  # tokenizers raises a bare Exception, its reason in one line
        reason = (str(exc).splitlines() or ["unreadable"])[0]
        return f"{file} is not a tokenizer ({reason})"
    return None


@cache
def _tokenized_book(tokenizer_json: str) -> tuple[Tokenizer, tuple[int, ...]]:
    """The tokenizer and the book's token ids, once per file (encoding the book takes a second)."""
    tokenizer = Tokenizer.from_file(tokenizer_json)
    return tokenizer, tuple(tokenizer.encode(book_text(), add_special_tokens=False).ids)


class PromptMaker:
    """Cuts (context, prompt) pairs of exact token sizes from the book.

    `directory` holds the engine's Hugging Face `tokenizer.json` (or is that file).
    """

    def __init__(self, directory: Path, seed: int | None = None) -> None:
        self._tokenizer, tokens = _tokenized_book(str(_tokenizer_file(directory).resolve()))
        self._tokens = list(tokens)
        self._rng = random.Random(seed)

    def count(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def pair(self, pp: int, depth: int, unique: bool = False) -> tuple[str, str]:
        """`depth` context tokens and `pp` prompt tokens; `unique` appends a uuid (no-cache)."""
        suffix = f" {uuid.uuid4()}" if unique else ""
        text_pp = max(0, pp - (self.count(suffix) if suffix else 0))
        needed = text_pp + depth
        tokens = self._tokens
        if len(tokens) < needed + 1:
            tokens = tokens * (needed // len(tokens) + 2)
        start = self._rng.randrange(0, len(tokens) - needed)
        window = tokens[start : start + needed]
        context = self._tokenizer.decode(window[:depth]) if depth else ""
        return context, self._tokenizer.decode(window[depth:]) + suffix


def adapted_sizes(spec: PointSpec, delta_user: int, delta_context: int) -> tuple[int, int]:
    """(prompt, context) text sizes that land the engine's count on the point's exact sizes.

    llama-benchy 0.4.0's `--adapt-prompt` (its default): its warm-up measures how many tokens the
    chat template adds around a user turn (`delta_user`) and around a system turn plus the probe
    turn (`delta_context`); at depth 0 the prompt is trimmed by the first, at depth > 0 the
    context by the second (the prompt keeps its size).
    """
    if spec.depth == 0:
        return max(1, spec.pp - delta_user), 0
    return spec.pp, max(1, spec.depth - delta_context)
