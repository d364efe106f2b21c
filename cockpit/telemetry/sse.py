"""Incremental parsing of OpenAI-style server-sent events (vLLM streaming completions).

Bytes arrive in arbitrary pieces (a UTF-8 character or a line may be split between reads), so the
parser keeps its partial state and yields events only when a blank line completes one. A chunk is
not a token: vLLM skips pieces with no text and may pack several tokens in one chunk, so token
counts come from the final `usage` chunk (`"choices": []`), never from counting chunks.
"""

from __future__ import annotations

import codecs
import json
from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True)
class SseEvent:
    """One server-sent event: its `data:` lines joined by newlines."""

    data: str
    event: str | None = None
    id: str | None = None


class SseParser:
    """Bytes in, complete events out (WHATWG event-stream rules, any line ending)."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._data: list[str] = []
        self._event: str | None = None
        self._id: str | None = None

    def feed(self, chunk: bytes | str) -> list[SseEvent]:
        text = chunk if isinstance(chunk, str) else self._decoder.decode(chunk)
        self._buffer += text
        events: list[SseEvent] = []
        while True:
            cut = _line_end(self._buffer)
            if cut is None:
                break
            end, skip = cut
            line, self._buffer = self._buffer[:end], self._buffer[end + skip :]
            event = self._line(line)
            if event is not None:
                events.append(event)
        return events

    def close(self) -> list[SseEvent]:
        """End of stream: a final event not followed by a blank line is still delivered."""
        tail = self._buffer + self._decoder.decode(b"", final=True)
        self._buffer = ""
        events = [e for e in (self._line(tail) if tail else None, self._line("")) if e]
        return events

    def _line(self, line: str) -> SseEvent | None:
        if line == "":
            if not self._data:
                self._event = None
                return None
            event = SseEvent("\n".join(self._data), self._event, self._id)
            self._data, self._event = [], None
            return event
        if line.startswith(":"):
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            self._id = value
        return None


def _line_end(buffer: str) -> tuple[int, int] | None:
    """Index and length of the first line terminator (\\r\\n, \\n or \\r), if complete."""
    newline, carriage = buffer.find("\n"), buffer.find("\r")
    if carriage == -1 or (newline != -1 and newline < carriage):
        return (newline, 1) if newline != -1 else None
    if carriage + 1 == len(buffer):
        return None  # may be the first half of \r\n
    return (carriage, 2) if buffer[carriage + 1] == "\n" else (carriage, 1)


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int | None
    completion_tokens: int | None
    total_tokens: int | None


@dataclass(frozen=True)
class StreamChunk:
    """One streamed completion chunk, reduced to what clients time and count.

    `text` joins the content (chat `delta.content`, or completions `text`) of every choice;
    `reasoning` the reasoning deltas. `kind` is `done` for `data: [DONE]`, `error` for an error
    object, `invalid` for data that is not JSON.
    """

    kind: Literal["chunk", "done", "error", "invalid"]
    id: str | None = None
    model: str | None = None
    role: str | None = None
    text: str = ""
    reasoning: str = ""
    finish_reason: str | None = None
    usage: Usage | None = None
    error: str | None = None


def _usage(value: Any) -> Usage | None:
    if not isinstance(value, dict):
        return None

    def num(key: str) -> int | None:
        item = value.get(key)
        return item if isinstance(item, int) else None

    return Usage(num("prompt_tokens"), num("completion_tokens"), num("total_tokens"))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def interpret(event: SseEvent) -> StreamChunk:
    """Read an OpenAI streaming event."""
    data = event.data.strip()
    if data == "[DONE]":
        return StreamChunk("done")
    try:
        obj = json.loads(data)
    except ValueError:
        return StreamChunk("invalid", error=data[:200])
    if not isinstance(obj, dict):
        return StreamChunk("invalid", error=data[:200])
    if "error" in obj:
        err = obj["error"]
        message = err.get("message") if isinstance(err, dict) else err
        return StreamChunk("error", error=str(message))
    text, reasoning, role, finish = [], [], None, None
    choices = obj.get("choices")
    for choice in choices if isinstance(choices, list) else []:
        if not isinstance(choice, dict):
            continue
        delta = choice.get("delta")
        if isinstance(delta, dict):
            text.append(_text(delta.get("content")))
            reasoning.append(_text(delta.get("reasoning_content") or delta.get("reasoning")))
            role = _text(delta.get("role")) or role
        text.append(_text(choice.get("text")))
        finish = _text(choice.get("finish_reason")) or finish
    return StreamChunk(
        "chunk",
        id=_text(obj.get("id")) or None,
        model=_text(obj.get("model")) or None,
        role=role,
        text="".join(text),
        reasoning="".join(reasoning),
        finish_reason=finish,
        usage=_usage(obj.get("usage")),
    )


class ChatStreamParser:
    """Bytes of an OpenAI streaming response in, `StreamChunk`s out."""

    def __init__(self) -> None:
        self._sse = SseParser()

    def feed(self, chunk: bytes | str) -> list[StreamChunk]:
        return [interpret(e) for e in self._sse.feed(chunk)]

    def close(self) -> list[StreamChunk]:
        return [interpret(e) for e in self._sse.close()]
