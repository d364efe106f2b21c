"""Text in and out of the simulated engine: the shipped tokenizer, the chat template, pseudo-words.

The engine tokenises prompts with the same files a client loads (`TOKENIZER_DIR`, also in every
simulated model snapshot), so `llama-benchy --tokenizer DIR` counts exactly what the engine
reports in `usage`. It is a byte-level BPE with a real model's density (tokenizer/build.py).

`encode` gives the tokenizer's ids without going through it for every request: the tokenizer
splits text at spaces and encodes each piece alone, so ids of pieces are cached and a prompt is
the concatenation of its pieces' ids; a whole segment (a system message resent with the next
turn, as benches do for a warm prefix) is cached too. A 256K-token prompt then costs tens of
milliseconds, not the second the tokenizer takes (whose wall time a client would see multiplied
by the simulator's speed).

Generated text is a deterministic stream of word tokens, each one token on its own (`pseudo_ids`):
`count` generated tokens re-encode to exactly `count` ids. The "multibyte" stream mixes in
characters of two bytes split over two byte tokens: the first decodes to nothing yet, as a real
server's incremental detokenizer shows with an empty text chunk that still carries its token id.
"""

from __future__ import annotations

import random
import re
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from functools import cache
from itertools import chain
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

TOKENIZER_DIR = Path(__file__).resolve().parent / "tokenizer"
"""The simulated engine's tokenizer (package data), copied into every simulated snapshot."""
SYLLABLES = (
    "ka", "lo", "mi", "ren", "sa", "tor", "vel", "qui", "dan", "pe", "zu", "mor", "li", "fen",
    "ta", "bri", "no", "shi", "gar", "u", "es", "ol", "ny", "thi",
)  # fmt: skip
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
_SPECIAL_RE = re.compile("(" + "|".join(map(re.escape, SPECIAL_TOKENS)) + ")")
_STREAM_TOKENS = 1 << 16
_MULTIBYTE_EVERY = 8
"""In the multibyte stream, one word in this many is a split two-byte character (" é")."""
_PIECES_MAX = 500_000
_SEGMENTS_MAX_CHARS = 16 << 20


@cache
def tokenizer() -> Tokenizer:
    return Tokenizer.from_file(str(TOKENIZER_DIR / "tokenizer.json"))


class _Encoder:
    """Piece and segment caches in front of the tokenizer (bounded: cleared when full)."""

    def __init__(self) -> None:
        self.spaced: dict[str, tuple[int, ...]] = {}
        """Ids of " " + piece, by piece."""
        self.segments: OrderedDict[str, list[int]] = OrderedDict()
        self.segment_chars = 0

    def encode(self, text: str) -> list[int]:
        ids = self.segments.get(text)
        if ids is not None:
            self.segments.move_to_end(text)
            return ids
        first, *rest = text.split(" ")
        try:
            ids = list(chain(self._bare(first), *map(self.spaced.__getitem__, rest)))
        except KeyError:
            self._learn(rest)
            ids = list(chain(self._bare(first), *map(self.spaced.__getitem__, rest)))
        if len(text) > 4096:
            self._remember(text, ids)
        return ids

    def _bare(self, piece: str) -> Sequence[int]:
        return tokenizer().encode(piece, add_special_tokens=False).ids if piece else ()

    def _learn(self, pieces: Iterable[str]) -> None:
        missing = list(set(pieces).difference(self.spaced))
        if len(self.spaced) + len(missing) > _PIECES_MAX:
            self.spaced.clear()
        encoded = tokenizer().encode_batch([" " + p for p in missing], add_special_tokens=False)
        self.spaced.update((p, tuple(e.ids)) for p, e in zip(missing, encoded, strict=True))

    def _remember(self, text: str, ids: list[int]) -> None:
        self.segments[text] = ids
        self.segment_chars += len(text)
        while self.segment_chars > _SEGMENTS_MAX_CHARS and len(self.segments) > 1:
            old, _ = self.segments.popitem(last=False)
            self.segment_chars -= len(old)


_ENCODER = _Encoder()


@cache
def _special_ids() -> dict[str, int]:
    tok = tokenizer()
    return {s: tok.token_to_id(s) for s in SPECIAL_TOKENS}


def encode(text: str) -> list[int]:
    """Token ids of `text` with special tokens recognised, as the shipped tokenizer gives them
    (`tokenizer().encode(text, add_special_tokens=False).ids`; a test holds them equal)."""
    specials = _special_ids()
    ids: list[int] = []
    for piece in _SPECIAL_RE.split(text):
        special = specials.get(piece)
        if special is not None:
            ids.append(special)
        elif piece:
            ids.extend(_ENCODER.encode(piece))
    return ids


def decode(ids: Sequence[int]) -> str:
    return tokenizer().decode(list(ids), skip_special_tokens=False)


def content_text(content: Any) -> str:
    """An OpenAI message `content`: a string, or a list of parts whose text parts are joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def render_chat(messages: Sequence[dict[str, Any]], add_generation_prompt: bool = True) -> str:
    """The shipped chat template (tokenizer_config.json), rendered without jinja."""
    text = "".join(
        f"<|im_start|>{m.get('role', 'user')}\n{content_text(m.get('content'))}<|im_end|>\n"
        for m in messages
    )
    return text + ("<|im_start|>assistant\n" if add_generation_prompt else "")


def _byte_symbols() -> dict[str, int]:
    """GPT-2's printable character → byte map that byte-level BPE vocabularies are written in."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)]
    printable += range(ord("®"), ord("ÿ") + 1)
    symbols = {chr(b): b for b in printable}
    extra = 0
    for b in range(256):
        if b not in printable:
            symbols[chr(256 + extra)] = b
            extra += 1
    return symbols


@cache
def token_bytes() -> dict[int, bytes]:
    """The bytes each token id stands for (special tokens: their text)."""
    symbols = _byte_symbols()
    out = {}
    for token, index in tokenizer().get_vocab(with_added_tokens=True).items():
        if token in SPECIAL_TOKENS:
            out[index] = token.encode()
        else:
            out[index] = bytes(symbols[c] for c in token)
    return out


@cache
def _word_ids() -> tuple[int, ...]:
    """Tokens that are a space and a word of letters, and that encode back to themselves."""
    tok, pieces = tokenizer(), token_bytes()
    words = []
    for index in sorted(pieces):
        text = pieces[index].decode("utf-8", "replace")
        word = len(text) > 2 and text[0] == " " and text[1:].isascii() and text[1:].isalpha()
        if word and tok.encode(text, add_special_tokens=False).ids == [index]:
            words.append(index)
    return tuple(words)


@cache
def _stream(multibyte: bool) -> tuple[tuple[int, ...], frozenset[int]]:
    """The stream's tokens and the indices where a whole word (or split character) starts."""
    rng = random.Random(20260929)
    words = _word_ids()
    split = tuple(encode(" é")) if multibyte else ()
    out: list[int] = []
    starts: set[int] = set()
    while len(out) + len(split) < _STREAM_TOKENS:
        starts.add(len(out))
        if split and rng.randrange(_MULTIBYTE_EVERY) == 0:
            out.extend(split)
        else:
            out.append(rng.choice(words))
    return tuple(out), frozenset(starts)


def pseudo_ids(seed: int, start: int, count: int, multibyte: bool = False) -> list[int]:
    """Tokens `start`..`start+count` of the request's endless pseudo-word stream (which begins
    on a whole word, so its text re-encodes to the same ids)."""
    stream, starts = _stream(multibyte)
    base = (seed * 7919) % len(stream)
    while base not in starts:
        base = (base + 1) % len(stream)
    offset = (base + start) % len(stream)
    out = list(stream[offset : offset + count])
    while len(out) < count:
        out.extend(stream[: count - len(out)])
    return out


def pseudo_text(seed: int, start: int, count: int) -> str:
    """The text of `pseudo_ids(seed, start, count)`: `count` tokens once encoded."""
    pieces = token_bytes()
    return b"".join(pieces[i] for i in pseudo_ids(seed, start, count)).decode()


class IncrementalDecoder:
    """Text of each new group of tokens, holding back an incomplete UTF-8 character until its
    last byte arrives (what vLLM's detokenizer sends: an empty text for a partial character)."""

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, ids: Sequence[int]) -> str:
        pieces = token_bytes()
        data = self._pending + b"".join(pieces[i] for i in ids)
        for cut in range(len(data), max(-1, len(data) - 4), -1):
            try:
                text = data[:cut].decode()
            except UnicodeDecodeError:
                continue
            self._pending = data[cut:]
            return text
        self._pending = b""
        return data.decode("utf-8", "replace")
