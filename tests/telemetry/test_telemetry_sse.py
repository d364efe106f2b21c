"""Incremental SSE parsing of OpenAI streaming responses, on a real vLLM capture."""

import pytest

from cockpit.telemetry.sse import ChatStreamParser, SseEvent, SseParser, Usage
from tests.replay import parse_stream

REAL = "vllm-0.32-cpu/sse_chat_stream.txt"


def _pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


@pytest.mark.parametrize("size", [1, 7, 64, 1 << 20])
def test_real_stream_any_split(fixture_text, size):
    raw = fixture_text(REAL).encode("utf-8")
    chunks = parse_stream(_pieces(raw, size))
    assert chunks[0].role == "assistant" and chunks[0].text == ""
    assert chunks[-1].kind == "done"
    usage_chunk = chunks[-2]
    assert usage_chunk.usage == Usage(319, 64, 383) and usage_chunk.text == ""
    content = [c for c in chunks if c.kind == "chunk" and c.text]
    # chunks are not tokens: fewer content chunks than completion tokens
    assert 0 < len(content) < usage_chunk.usage.completion_tokens
    assert next(c.finish_reason for c in chunks if c.finish_reason) == "length"
    assert all(c.id == "chatcmpl-b08ad970af0625cb" for c in chunks[:-1])
    assert "".join(c.text for c in chunks).startswith("he 70pesu milin")


def test_multibyte_character_split_across_reads():
    parser = SseParser()
    data = 'data: {"x": "é"}\n\n'.encode()
    cut = data.index("é".encode()) + 1
    assert parser.feed(data[:cut]) == []
    assert parser.feed(data[cut:]) == [SseEvent('{"x": "é"}')]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_line_endings_comments_and_multiline_data(newline):
    text = newline.join([": keep-alive", "event: message", "id: 7", "data: a", "data:b", "", ""])
    parser = SseParser()
    # a trailing bare \r may still be half of \r\n: the last blank line is known only at close
    events = parser.feed(text.encode()) + parser.close()
    assert events == [SseEvent("a\nb", "message", "7")]


def test_crlf_split_between_reads():
    parser = SseParser()
    assert parser.feed(b"data: x\r") == []
    assert parser.feed(b"\n\r\n") == [SseEvent("x")]


def test_close_flushes_unterminated_event():
    parser = ChatStreamParser()
    assert parser.feed(b"data: [DONE]") == []
    assert [c.kind for c in parser.close()] == ["done"]


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b"data: {not json}\n\n", "invalid"),
        (b"data: [1,2]\n\n", "invalid"),
        (b'data: {"error": {"message": "prompt too long", "code": 400}}\n\n', "error"),
        (b'data: {"choices": [{"text": "hi", "index": 0}]}\n\n', "chunk"),
    ],
)
def test_odd_payloads(data, kind):
    (chunk,) = ChatStreamParser().feed(data)
    assert chunk.kind == kind
    if kind == "error":
        assert chunk.error == "prompt too long"
    if kind == "chunk":
        assert chunk.text == "hi"  # /v1/completions streams `text`, not `delta`


def test_reasoning_deltas_are_kept_apart():
    data = b'data: {"choices":[{"delta":{"reasoning_content":"think"}}]}\n\n'
    (chunk,) = ChatStreamParser().feed(data)
    assert chunk.reasoning == "think" and chunk.text == ""


def test_garbage_bytes_never_raise():
    parser = ChatStreamParser()
    out = parser.feed(b"\xff\xfe\x00garbage\n\n\n") + parser.close()
    assert all(c.kind != "done" for c in out)
