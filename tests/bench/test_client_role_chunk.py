"""The first chunk of a `return_token_ids` stream carries the whole prompt's ids (vLLM 0.32)."""

from __future__ import annotations

import json

import pytest

from cockpit.bench import client


def test_a_role_chunk_with_a_deep_prompts_ids_is_read_without_parsing_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ids = list(range(1000, 1000 + 262_144))
    chunk = {"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}],
             "prompt_token_ids": ids, "prompt_text": None}  # fmt: skip
    parsed: list[int] = []
    loads = json.loads
    monkeypatch.setattr(client.json, "loads", lambda s: parsed.append(len(s)) or loads(s))
    assert client._chunk_fields(json.dumps(chunk, separators=(",", ":"))) == (
        True, False, None, None,
    )  # fmt: skip
    assert parsed and parsed[0] < 1000  # the 1.6 MB of ids were cut out, not parsed
    small = json.dumps({"choices": [{"delta": {"content": "x"}, "token_ids": [5, 6]}]})
    assert client._chunk_fields(small) == (True, True, 2, None)
