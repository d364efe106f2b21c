"""JSON shapes of vLLM 0.32's OpenAI server (pure): responses, stream chunks and error bodies.

Every key and its order are the real server's, read off a running vLLM 0.32.0 (the CPU build):
non-streamed chat and text completions, their SSE chunks with and without `return_token_ids`
(the token ids of each chunk; the prompt's ids on the first one), `system_fingerprint` on the
usage chunk (or on the last content chunk when the request asked for no usage), and the error
bodies: vLLM's own (`{"error": {"message", "type", "param", "code"}}` with `(parameter=...,
value=...)` in the message) and FastAPI's request validation ("1 validation error: ...",
type "Bad Request").
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from cockpit_sim.engine import logs


def fingerprint(tensor_parallel_size: int, config: str) -> str:
    """`vllm-0.32.0[-tpN]-<hash8>`: vLLM's "full" fingerprint (hash8 of the engine config)."""
    parts = [f"vllm-{logs.VLLM_VERSION}"]
    if tensor_parallel_size > 1:
        parts.append(f"tp{tensor_parallel_size}")
    parts.append(hashlib.sha256(config.encode()).hexdigest()[:8])
    return "-".join(parts)


def error_body(status: int, message: str, kind: str, param: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": status}}


_NO_VALUE = object()


def bad_request(message: str, param: str, value: Any = _NO_VALUE) -> dict[str, Any]:
    """vLLM's BadRequestError: the parameter (and its value, when it has one) in the message."""
    shown = f"parameter={param}" if value is _NO_VALUE else f"parameter={param}, value={value}"
    return error_body(400, f"{message} ({shown})", "BadRequestError", param)


def validation_error(kind: str, loc: str, msg: str, given: str, ctx: str | None = None) -> dict:
    """FastAPI's 400 for a body pydantic refuses (one error), as vLLM's handler words it."""
    detail: dict[str, Any] = {"type": kind, "loc": loc, "msg": msg, "input": given}
    if ctx is not None:
        detail["ctx"] = {"error": ctx}
    return error_body(400, f"1 validation error:\n  {detail}", "Bad Request", loc)


def described(value: Any) -> str:
    """How the validation error shows the refused input (`<dict of 2 items>`, `'x'`...)."""
    if isinstance(value, dict | list):
        return f"<{type(value).__name__} of {len(value)} items>"
    return str(value)


def check_int(body: dict[str, Any], key: str) -> dict[str, Any] | None:
    """The validation error of a non-integer `body[key]` (absent or None is fine)."""
    value = body.get(key)
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return None
    loc = f"body.{key}"
    if isinstance(value, float):
        if value.is_integer():
            body[key] = int(value)
            return None
        msg = "Input should be a valid integer, got a number with a fractional part"
        return validation_error("int_from_float", loc, msg, described(value))
    if isinstance(value, str):
        try:
            body[key] = int(value)
            return None
        except ValueError:
            msg = "Input should be a valid integer, unable to parse string as an integer"
            return validation_error("int_parsing", loc, msg, value)
    return validation_error("int_type", loc, "Input should be a valid integer", described(value))


def parse_body(raw: bytes) -> dict[str, Any]:
    """The request body, or the validation error body under the key "error"."""
    if not raw.strip():
        return {"error": validation_error("missing", "body", "Field required", "None")["error"]}
    try:
        body = json.loads(raw)
    except json.JSONDecodeError as e:
        refused = validation_error(
            "json_invalid", f"body.{e.pos}", "JSON decode error", "<dict of 0 items>", e.msg
        )
        return {"error": refused["error"]}
    if not isinstance(body, dict):
        msg = "Input should be a valid dictionary or object to extract fields from"
        refused = validation_error("model_attributes_type", "body", msg, described(body))
        return {"error": refused["error"]}
    return {"body": body}


PROMPT_IDS_MARK = "\x00prompt_token_ids\x00"
_MARK_JSON = json.dumps(PROMPT_IDS_MARK)


def ids_json(ids: list[int]) -> str:
    return "[" + ",".join(map(str, ids)) + "]"


def splice(chunk_json: str, prompt_ids_json: str) -> str:
    """A serialised stream chunk with the prompt's ids in place of their mark. The ids (256K of
    them at depth) are serialised once, while the prefill runs: serialising them when the first
    token is due would delay it by tens of milliseconds, which the speed turns into seconds."""
    return chunk_json.replace(_MARK_JSON, prompt_ids_json, 1)


def _usage(prompt: int, completion: int, details: bool) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "total_tokens": prompt + completion,
        "completion_tokens": completion,
    }
    if details:
        usage |= {"prompt_tokens_details": None, "completion_tokens_details": None}
    return usage


@dataclass(frozen=True)
class Reply:
    """The JSON of one response (chat or text completion)."""

    rid: str
    created: int
    model: str
    chat: bool
    prompt_ids: list[int]
    fingerprint: str
    with_ids: bool

    @property
    def kind(self) -> str:
        return "chat.completion.chunk" if self.chat else "text_completion"

    def _head(self, kind: str) -> dict[str, Any]:
        return {"id": self.rid, "object": kind, "created": self.created, "model": self.model}

    def _prompt_ids(self) -> list[int] | None:
        return self.prompt_ids if self.with_ids else None

    def _prompt_ids_mark(self) -> str | None:
        """In stream chunks: a mark `splice` replaces with the prompt ids' JSON."""
        return PROMPT_IDS_MARK if self.with_ids else None

    def role_chunk(self) -> dict[str, Any]:
        choice = {
            "index": 0,
            "delta": {"role": "assistant", "content": ""},
            "logprobs": None,
            "finish_reason": None,
        }
        chunk = self._head(self.kind) | {"choices": [choice]}
        return chunk | {"prompt_token_ids": self._prompt_ids_mark(), "prompt_text": None}

    def delta_chunk(
        self, piece: str, ids: list[int], reason: str | None, first: bool, last_without_usage: bool
    ) -> dict[str, Any]:
        choice: dict[str, Any]
        token_ids = ids if self.with_ids else None
        if self.chat:
            choice = {"index": 0, "delta": {"content": piece}, "logprobs": None}
            choice["finish_reason"] = reason
            if reason is not None:
                choice["stop_reason"] = None
            choice["token_ids"] = token_ids
        else:
            choice = {"index": 0, "text": piece, "logprobs": None, "finish_reason": reason}
            choice["stop_reason"] = None
            choice["prompt_token_ids"] = self._prompt_ids_mark() if first else None
            choice["token_ids"] = token_ids
        chunk = self._head(self.kind) | {"choices": [choice]}
        if last_without_usage:
            chunk["system_fingerprint"] = self.fingerprint
        return chunk

    def usage_chunk(self, completion: int) -> dict[str, Any]:
        usage = _usage(len(self.prompt_ids), completion, details=False)
        return self._head(self.kind) | {
            "choices": [],
            "usage": usage,
            "system_fingerprint": self.fingerprint,
        }

    def full(self, produced: str, ids: list[int], reason: str) -> dict[str, Any]:
        token_ids = ids if self.with_ids else None
        usage = _usage(len(self.prompt_ids), len(ids), details=True)
        tail = {"kv_transfer_params": None, "ec_transfer_params": None, "metrics": None}
        if self.chat:
            message = {
                "role": "assistant",
                "content": produced,
                "refusal": None,
                "annotations": None,
                "audio": None,
                "function_call": None,
                "reasoning": None,
            }
            choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": reason}
            choice |= {"stop_reason": None, "token_ids": token_ids, "routed_experts": None}
            head = self._head("chat.completion") | {"choices": [choice], "service_tier": None}
            body = head | {"system_fingerprint": self.fingerprint, "usage": usage}
            prompt = {"prompt_logprobs": None, "prompt_token_ids": self._prompt_ids()}
            return body | prompt | {"prompt_text": None} | tail
        choice = {"index": 0, "text": produced, "logprobs": None, "finish_reason": reason}
        choice |= {"stop_reason": None, "token_ids": token_ids, "prompt_logprobs": None}
        choice |= {"prompt_token_ids": self._prompt_ids(), "routed_experts": None}
        head = self._head("text_completion") | {"choices": [choice], "service_tier": None}
        return head | {"system_fingerprint": self.fingerprint, "usage": usage} | tail
