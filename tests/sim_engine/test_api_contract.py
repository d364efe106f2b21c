"""The simulated engine's HTTP API held to vLLM 0.32's, as a running real server answered.

The expected bodies below were read off a real `vllm serve` (the CPU build of vLLM 0.32.0, a tiny
Llama, `--max-model-len 4096`), the stream shapes from the capture
tests/fixtures/telemetry/vllm-0.32-cpu/sse_chat_stream.txt.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from cockpit_sim.engine import text
from tests.sim_engine.engine_proc import SMALL, EngineProc, start

MML = 4096
CAPTURE = Path(__file__).parents[1] / "fixtures" / "telemetry" / "vllm-0.32-cpu"


@pytest.fixture(scope="module")
def lane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineProc]:
    node = tmp_path_factory.mktemp("api") / "dgx1"
    proc = start(node, SMALL, "--served-model-name", "tiny", "--max-model-len", str(MML),
                 speed=50, boot_speed=2000)  # fmt: skip
    try:
        assert proc.wait_for("Application startup complete.", 60), proc.text()[-2000:]
        yield proc
    finally:
        proc.stop()


def _post(lane: EngineProc, path: str, body: object) -> httpx.Response:
    return httpx.post(lane.url + path, json=body, timeout=60)


def _error(response: httpx.Response) -> dict:
    return response.json()["error"]


def test_version_tokenize_detokenize_and_unknown_paths(lane: EngineProc) -> None:
    assert httpx.get(lane.url + "/version").json() == {"version": "0.32.0"}
    got = _post(lane, "/tokenize", {"model": "tiny", "prompt": "hello world"}).json()
    ids = text.encode("hello world")
    assert got == {"count": len(ids), "max_model_len": MML, "tokens": ids, "token_strs": None}
    messages = [{"role": "user", "content": "hello world"}]
    chat = _post(lane, "/tokenize", {"messages": messages}).json()
    assert chat["tokens"] == text.encode(text.render_chat(messages))
    back = _post(lane, "/detokenize", {"tokens": got["tokens"]}).json()
    assert back == {"prompt": "hello world"}
    assert httpx.get(lane.url + "/nope").json() == {"detail": "Not Found"}
    card = httpx.get(lane.url + "/v1/models").json()["data"][0]
    assert list(card) == ["id", "object", "created", "owned_by", "root", "parent",
                          "max_model_len", "permission"]  # fmt: skip
    assert card["max_model_len"] == MML


def test_errors_as_vllm_words_them(lane: EngineProc) -> None:
    r = _post(lane, "/v1/completions", {"model": "nope", "prompt": "hello", "max_tokens": 5})
    assert r.status_code == 404
    assert _error(r) == {"message": "The model `nope` does not exist. Valid aliases: tiny.",
                         "type": "NotFoundError", "param": "model", "code": 404}  # fmt: skip
    r = _post(lane, "/v1/completions", {"prompt": "hello", "max_tokens": 5000})
    assert _error(r) == {
        "message": "max_tokens=5000 cannot be greater than max_model_len=4096. Please request "
        "fewer output tokens. (parameter=max_tokens, value=5000)",
        "type": "BadRequestError", "param": "max_tokens", "code": 400,
    }  # fmt: skip
    r = _post(lane, "/v1/chat/completions",
              {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 0})  # fmt: skip
    assert _error(r)["message"] == (
        "max_tokens must be at least 1, got 0. (parameter=max_tokens, value=0)"
    )
    long = " hello" * (MML + 100)
    r = _post(lane, "/v1/completions", {"prompt": long, "max_tokens": 10})
    assert r.status_code == 400 and _error(r)["param"] == "input_tokens"
    assert _error(r)["message"] == (
        "This model's maximum context length is 4096 tokens. However, your prompt contains at "
        "least 4097 input tokens, which exceeds this limit even without any output tokens. "
        "Please reduce the length of the input prompt. (parameter=input_tokens, value=4097)"
    )
    r = _post(lane, "/v1/chat/completions", {"messages": []})
    assert _error(r) == {
        "message": "Cannot apply chat template to an empty conversation. Provide at least one "
        "message.", "type": "BadRequestError", "param": None, "code": 400,
    }  # fmt: skip
    r = _post(lane, "/v1/completions", {"model": "tiny"})
    assert _error(r)["message"] == (
        "Either prompt or prompt_embeds must be provided and non-empty. (parameter=prompt)"
    )
    r = httpx.post(lane.url + "/v1/chat/completions", content=b"{bad json",
                   headers={"content-type": "application/json"})  # fmt: skip
    assert _error(r) == {
        "message": "1 validation error:\n  {'type': 'json_invalid', 'loc': 'body.1', 'msg': "
        "'JSON decode error', 'input': '<dict of 0 items>', 'ctx': {'error': 'Expecting property "
        "name enclosed in double quotes'}}", "type": "Bad Request", "param": "body.1", "code": 400,
    }  # fmt: skip
    r = _post(lane, "/v1/completions", {"prompt": "hi", "max_tokens": "x"})
    assert (
        _error(r)["param"] == "body.max_tokens" and "'type': 'int_parsing'" in _error(r)["message"]
    )


def test_prompt_and_max_tokens_beyond_the_length_are_truncated_not_refused(
    lane: EngineProc,
) -> None:
    prompt = " hello" * 4000
    prompt_len = len(text.encode(prompt))
    r = _post(lane, "/v1/completions", {"prompt": prompt, "max_tokens": 3000})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["prompt_tokens"] == prompt_len
    assert body["usage"]["completion_tokens"] == MML - prompt_len
    # the room left is 0: vLLM clamps max_tokens to it and refuses the 0
    full = " hello" * (MML - 1) + " hi"
    assert len(text.encode(full)) == MML
    r = _post(lane, "/v1/completions", {"prompt": full, "max_tokens": 1})
    assert _error(r)["message"] == (
        "max_tokens must be at least 1, got 0. (parameter=max_tokens, value=0)"
    )


def _keys(chunk: dict) -> tuple[list[str], list[str]]:
    choice = chunk["choices"][0] if chunk["choices"] else {}
    return list(chunk), list(choice)


def _capture_chunks() -> list[dict]:
    lines = (CAPTURE / "sse_chat_stream.txt").read_text(encoding="utf-8").splitlines()
    return [json.loads(ln[6:]) for ln in lines if ln.startswith("data: {")]


def _stream(lane: EngineProc, path: str, body: dict) -> tuple[list[dict], str]:
    with httpx.stream("POST", lane.url + path, json=body, timeout=60) as resp:
        kind = resp.headers["content-type"]
        lines = [ln for ln in resp.iter_lines() if ln]
    assert lines[-1] == "data: [DONE]"
    return [json.loads(ln[6:]) for ln in lines[:-1]], kind


def test_chat_stream_has_the_real_chunk_shapes_and_fingerprint(lane: EngineProc) -> None:
    real = _capture_chunks()
    messages = [{"role": "user", "content": "Tell me a story."}]
    body = {"messages": messages, "max_tokens": 24, "stream": True,
            "stream_options": {"include_usage": True}}  # fmt: skip
    chunks, kind = _stream(lane, "/v1/chat/completions", body)
    assert kind == "text/event-stream; charset=utf-8"
    for index in (0, 1, -2, -1):  # role, content, last content (finish reason), usage
        assert _keys(chunks[index]) == _keys(real[index]), index
    assert re.fullmatch(r"vllm-0\.32\.0-[0-9a-f]{8}", chunks[-1]["system_fingerprint"])
    assert chunks[-1]["usage"]["completion_tokens"] == 24 == len(chunks) - 2
    # without usage, the fingerprint rides on the last content chunk, as on the real server
    chunks, _ = _stream(lane, "/v1/chat/completions", body | {"stream_options": None})
    assert "system_fingerprint" in chunks[-1] and chunks[-1]["choices"][0]["finish_reason"]
    # return_token_ids: the prompt's ids on the role chunk, each chunk's own ids
    chunks, _ = _stream(lane, "/v1/chat/completions", body | {"return_token_ids": True})
    assert chunks[0]["prompt_token_ids"] == text.encode(text.render_chat(messages))
    ids = [i for c in chunks[1:-1] for i in c["choices"][0]["token_ids"]]
    content = "".join(c["choices"][0]["delta"]["content"] for c in chunks[1:-1])
    assert len(ids) == 24 and text.encode(content) == ids


def test_non_streamed_bodies_have_the_real_keys(lane: EngineProc) -> None:
    chat = _post(lane, "/v1/chat/completions",
                 {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}).json()  # fmt: skip
    assert list(chat) == [
        "id", "object", "created", "model", "choices", "service_tier", "system_fingerprint",
        "usage", "prompt_logprobs", "prompt_token_ids", "prompt_text", "kv_transfer_params",
        "ec_transfer_params", "metrics",
    ]  # fmt: skip
    assert list(chat["choices"][0]) == ["index", "message", "logprobs", "finish_reason",
                                        "stop_reason", "token_ids", "routed_experts"]  # fmt: skip
    assert list(chat["choices"][0]["message"]) == ["role", "content", "refusal", "annotations",
                                                   "audio", "function_call", "reasoning"]  # fmt: skip
    done = _post(lane, "/v1/completions", {"prompt": "hello", "max_tokens": 3}).json()
    assert list(done["choices"][0]) == ["index", "text", "logprobs", "finish_reason",
                                        "stop_reason", "token_ids", "prompt_logprobs",
                                        "prompt_token_ids", "routed_experts"]  # fmt: skip
    assert list(done["usage"]) == ["prompt_tokens", "total_tokens", "completion_tokens",
                                   "prompt_tokens_details", "completion_tokens_details"]  # fmt: skip


def _socket_reads(lane: EngineProc, body: dict) -> list[bytes]:
    """Each recv() of a raw HTTP stream (what a client timing per socket read sees)."""
    payload = json.dumps(body).encode()
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: {lane.host}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
            "Connection: close\r\n\r\n").encode()  # fmt: skip
    reads = []
    with socket.create_connection((lane.host, lane.port), timeout=30) as sock:
        sock.sendall(head + payload)
        while data := sock.recv(1 << 16):
            reads.append(data)
    return reads


def test_bursty_stream_knob_switched_on_a_serving_lane(lane: EngineProc) -> None:
    body = {"messages": [{"role": "user", "content": "Tell me more."}], "max_tokens": 64,
            "stream": True, "stream_options": {"include_usage": True},
            "return_token_ids": True}  # fmt: skip
    plain, _ = _stream(lane, "/v1/chat/completions", body)
    content = [c["choices"][0] for c in plain[1:-1]]
    assert len(content) == 64 and all(len(c["token_ids"]) == 1 for c in content)
    assert all(c["delta"]["content"] for c in content)  # default: one chunk per token, all text
    node = json.loads((lane.node_dir / "node.json").read_text()) if (
        lane.node_dir / "node.json").exists() else {}  # fmt: skip
    (lane.node_dir / "node.json").write_text(json.dumps(node | {"faults": {"bursty_stream": True}}))
    try:
        reads = _socket_reads(lane, body)
        bursty, _ = _stream(lane, "/v1/chat/completions", body)
    finally:
        (lane.node_dir / "node.json").write_text(json.dumps(node | {"faults": {}}))
    per_read = [r.count(b"data: {") for r in reads]
    assert max(per_read) >= 3 and sum(per_read) == len(bursty) + 0  # bursts: several per read
    content = [c["choices"][0] for c in bursty[1:-1]]
    ids = [i for c in content for i in c["token_ids"]]
    assert len(ids) == 64 == bursty[-1]["usage"]["completion_tokens"]
    assert len(content) < 64  # fewer chunks than tokens
    empty = [c for c in content if not c["delta"]["content"]]
    assert empty and all(c["token_ids"] for c in empty)  # empty text, token ids still there
    assert text.encode("".join(c["delta"]["content"] for c in content)) == ids
